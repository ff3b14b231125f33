/** `'write'` is exclusive (one holder); `'read'` is shared by any number of readers. */
export type LockMode = 'read' | 'write';

/** Per-call options of `acquire`, `tryAcquire`, `withLock` and the decorators. Unset fields use the module options. */
export interface AcquireOptions {
  /** Lock mode. Default `'write'`: an exclusive lock is a write lock. */
  readonly mode?: LockMode;
  /**
   * Lease in milliseconds: how long Redis keeps the hold if this process stops renewing it. Default: module `leaseMs`.
   */
  readonly leaseMs?: number;
  /** Renew the lease every `leaseMs / 3` while held. Default: module `autoExtend` (`true`). */
  readonly autoExtend?: boolean;
  /**
   * How long to wait for the lock, in milliseconds; `0` tries once. Default: module `waitTimeoutMs`. Ignored by
   * `tryAcquire`.
   */
  readonly waitTimeoutMs?: number;
  /** Cancels waiting: the call rejects with `signal.reason`. Has no effect once the lock is held. */
  readonly signal?: AbortSignal;
  /**
   * Fair lock: waiters are served in arrival order (consecutive readers at the head enter together) and only the
   * next one is woken. Default `false`. Use the same fairness for every acquisition of a key.
   */
  readonly fair?: boolean;
  /**
   * What a busy lock means for `withLock` / `withReadLock` / `withWriteLock` (and the decorators): `'wait'` (default)
   * waits up to `waitTimeoutMs`; `'skip'` makes one attempt and, when the lock is busy (or Redis cannot be reached),
   * does not run the function: the call resolves to `undefined` and a `skipped` event records why. On a controller a
   * skipped request answers the conflict status (409), or 503 when Redis cannot be reached. `acquire` and
   * `tryAcquire` ignore it.
   */
  readonly ifLocked?: 'wait' | 'skip';
  /**
   * The hold lasts at least this long after it was granted, measured on Redis's clock, even when the work finished
   * sooner or its process died (ShedLock's `lockAtLeastFor`): the first lease is at least this long, and a release
   * before then shortens the lease to the remainder instead of freeing the lock. Meanwhile `isHeld` is false, nothing
   * renews it, `inspect` shows the holder as `finished`, shutdown leaves it and no waiter is woken before it ends.
   * In milliseconds. Default `0` (off).
   */
  readonly holdAtLeastMs?: number;
}

/**
 * Where a hold stands. `'held'`: its lease is confirmed. `'in-doubt'`: the connection to Redis dropped or went silent
 * while it was held: it may still be valid (until its local lease deadline) but cannot be confirmed now, so long work
 * should pause its writes; it goes back to `'held'` when a renewal succeeds before that deadline, otherwise to
 * `'lost'`. `'lost'`: lost while held (`signal` aborted). `'released'`: released by its holder.
 */
export type HoldState = 'held' | 'in-doubt' | 'lost' | 'released';

/** A held lock (one or several keys, all or nothing). */
export interface LockHandle {
  /** The lock key; for a multi-key lock, the first key in lock order. */
  readonly key: string;
  /** Every key held, in the order they were locked (sorted). */
  readonly keys: readonly string[];
  readonly mode: LockMode;
  /**
   * Secret owner token, 128 random bits in hex. With it, `LockService.release(key, token)` frees this hold from
   * any process. Nested (reentrant) acquisitions in the same owner context share it.
   */
  readonly token: string;
  /**
   * Fencing token of `key`: strictly increasing across successive acquisitions of the same key. Pass it to the
   * storage you protect and reject writes carrying a smaller one.
   */
  readonly fencingToken: number;
  /** Fencing token of every key, by key. */
  readonly fencingTokens: Readonly<Record<string, number>>;
  /** Aborted with a `LockLostError` when the lock is lost while held. */
  readonly signal: AbortSignal;
  /** `true` while this handle has not been released and the lock has not been lost (also while it is in doubt). */
  readonly isHeld: boolean;
  /**
   * `'held'`, `'in-doubt'` (the connection to Redis dropped or went silent: pause writes until it is `'held'` again),
   * `'lost'` or `'released'`. A lock on several keys is in doubt while any of them is, lost when any of them is.
   */
  readonly state: HoldState;
  /**
   * Calls `listener` with the new `state` each time it changes while held: `'in-doubt'`, back to `'held'`, `'lost'`.
   * Returns the function that stops listening.
   */
  onStateChange(listener: (state: HoldState) => void): () => void;
  /** Whether this acquisition re-entered a hold the owner context already had. */
  readonly reentrant: boolean;
  /**
   * Releases this acquisition (one level of a reentrant hold). Resolves `true` when Redis released it, `false` when
   * the handle was released already or the lock had been lost. Never throws for a lost lock.
   */
  release(): Promise<boolean>;
  /**
   * Makes the lease run `ms` from now (default: this hold's `leaseMs`), on every key. Rejects with
   * `LockNotHeldError` if the lock is no longer held.
   */
  extend(ms?: number): Promise<void>;
  /**
   * `release()` for `await using lock = await locks.acquire(key)`: the lock is released when the block ends, also
   * when it throws. Resolves quietly for a handle released already or lost; rejects as `release()` does when Redis
   * cannot be reached (the lease then frees the lock).
   */
  [Symbol.asyncDispose](): Promise<void>;
}

/** One holder of a lock, as `inspect` reports it. */
export interface LockHolderInfo {
  readonly mode: LockMode;
  /** Owner context id: `<instance id>:<context number>`; not the secret token. */
  readonly owner: string;
  readonly host: string;
  readonly pid: number;
  readonly app: string;
  /** Reentrant hold count. */
  readonly holdCount: number;
  /** The holder's work is done but the hold lasts until `holdAtLeastMs` after it was granted (hold count 0). */
  readonly finished: boolean;
  /** When this hold was first acquired (Redis server time). */
  readonly since: Date;
  /** Remaining lease in milliseconds (Redis server time). */
  readonly remainingLeaseMs: number;
  readonly fencingToken: number;
}

/** What `inspect` returns for a held lock. */
export interface LockInfo {
  readonly key: string;
  /** `'write'` while a writer holds it (its owner may also hold reads), otherwise `'read'`. */
  readonly mode: LockMode;
  readonly holders: readonly LockHolderInfo[];
  /** Waiting writers plus waiting readers. */
  readonly waiting: number;
  readonly waitingWriters: number;
  readonly waitingReaders: number;
  /** The last fencing token handed out for this key. */
  readonly fencingToken: number;
}

/** What `ping` found: a round trip on the command and on the wake-up connection. */
export interface LockPing {
  /** The command connection answered in time. */
  readonly command: boolean;
  /** The wake-up (subscriber) connection answered in time. */
  readonly subscriber: boolean;
  /** Round trip of the command connection, in milliseconds. */
  readonly commandMs: number;
  /** Round trip of the wake-up connection, in milliseconds. */
  readonly subscriberMs: number;
  /** The first failure, when there was one. */
  readonly error?: string;
}
