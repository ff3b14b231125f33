import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import type { LockInfo, LockMode, LockPing } from '../types/lock.types.js';

/**
 * The seam between the lock engine and where locks live. The engine decides *when* to acquire, wait, renew and
 * release; a store decides *how*, atomically, on its backend. The stores: `RedisLockStore` (one Redis: standalone,
 * Sentinel or Cluster), `QuorumLockStore` (one `RedisLockStore` per independent master, a call counts when a majority
 * agrees), `MemoryLockStore` (the testing module's, in this process), and the wrappers `BoundedLockStore` (every
 * call bounded by the command timeout) and `StoreRouter` (a lock's calls to the lock store, a permit's to the permit
 * store). Redis key names, KEYS/ARGV positions, the holder-record format and reply codes stay in `lib/redis/`;
 * command deadlines, Redis Functions, pipelining and fan-out to several masters belong behind this interface.
 *
 * Every method either settles with a typed reply or rejects; none of them throws synchronously.
 */
export interface LockStore {
  /** The store's handle on `key` (a valid lock key), made once and reused by every call on that lock. */
  lock(key: string): LockRef;
  /** Takes or re-enters a hold; when blocked, registers `waiterId` (if given) as a waiter. */
  acquire(call: AcquireCall): Promise<AcquireReply>;
  /**
   * Releases one reentrant level of `token`'s hold (`seq` given), or every level (`seq` undefined: a release by
   * token from any process), and wakes whoever can now get in. `holdAtLeastMs` (last level only): if the hold was
   * granted less than that long ago (the store's clock), it is kept, finished (hold count 0), until then, and nobody
   * is woken; the reply is `'ended'` all the same.
   */
  release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs?: number): Promise<ReleaseReply>;
  /** Renews many leases in as few round trips as the backend allows; one result per call: still held or not. */
  renew(holds: readonly RenewCall[]): Promise<boolean[]>;
  /** Makes `token`'s lease run `ms` from now (may shorten it). `false` when the token holds nothing there. */
  extend(lock: LockRef, token: string, ms: number): Promise<boolean>;
  /** Withdraws a waiter that gave up and passes on any wake-up it may have taken. */
  cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void>;
  /**
   * The waiters' heartbeat: renews the registrations of waiters that still wait (never re-creating one that is gone),
   * passes over waiters that died or froze, and tells each waiter whether to attempt again now.
   */
  keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]>;
  /** Frees the lock whoever holds it. `true` if it was held. */
  forceRelease(lock: LockRef): Promise<boolean>;
  /** A consistent snapshot of the lock; `null` when nobody holds it. */
  inspect(lock: LockRef): Promise<LockInfo | null>;
  /** Listens for wake-ups of `lock` (subscriptions are shared and counted per lock). */
  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription;
  /** Whether wake-ups of `lock` are already being received: a listener added now misses none. */
  isListening(lock: LockRef): boolean;
  /**
   * The `LockError` to report for a failed call: `failure` is what the call rejected with, or `TIMED_OUT` when it
   * got no answer within `timeoutMs` (see `BoundedLockStore`, which bounds every call).
   */
  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError;
  /** Round trip on every connection the store uses, each bounded by `timeoutMs`. Never rejects. */
  ping(timeoutMs: number): Promise<StorePing>;
  /** Drops subscriptions and closes the connections the store opened. */
  close(): Promise<void>;
}

/** What a store is made with: the engine's settings it needs, and where to report connection trouble. */
export interface LockStoreContext {
  readonly keyPrefix: string;
  /** Recorded with every hold. */
  readonly identity: HolderIdentity;
  /** How long an idle wake-up subscription is kept, in milliseconds. */
  readonly subscriptionLingerMs: number;
  /** The most one round trip may take, in milliseconds (connections the store opens are tuned to it). */
  readonly commandTimeoutMs: number;
  /** `waitForReplicas`: writes that grant or extend a lease wait for the replicas (`undefined`: off). */
  readonly waitForReplicas?: ReplicaWaitSettings;
  /** Errors outside any caller's call (e.g. dropping an idle subscription). */
  readonly onConnectionError: (err: unknown) => void;
  /** What the start-up check found that works but risks the locks (an evicting `maxmemory-policy`, a timeout). */
  readonly warn?: (message: string) => void;
  /** A connection went down (once, not once per reconnect attempt) or came back. */
  readonly onConnectionState: (change: ConnectionStateChange) => void;
}

/** `waitForReplicas` as a store takes it (validated, defaults merged). */
export interface ReplicaWaitSettings {
  /** Replicas that must acknowledge a write, or `'connected'`: as many as the master has connected. */
  readonly replicas: number | 'connected';
  /** How long `WAIT` may wait for them, in milliseconds. */
  readonly timeoutMs: number;
  /** `true`: `WAITAOF` (the replicas' append-only files) instead of `WAIT`. */
  readonly aof?: boolean;
}

/** A connection of the store going down or coming back. */
export interface ConnectionStateChange {
  /** `'command'`: scripts and renewals; `'subscriber'`: wake-ups. */
  readonly connection: 'command' | 'subscriber';
  readonly state: 'lost' | 'restored';
  /** Why it went down (`lost`). */
  readonly error?: unknown;
  /** How long it was down, in milliseconds (`restored`). */
  readonly downMs?: number;
}

/** Makes the store of one engine. */
export type LockStoreFactory = (context: LockStoreContext) => LockStore;

/** A lock as its store addresses it. Made by `LockStore.lock`; only the store looks inside. */
export interface LockRef {
  readonly key: string;
}

/** Who takes a hold, recorded with it for `inspect` and the deadlock alarm. */
export interface HolderIdentity {
  readonly host: string;
  readonly pid: number;
  readonly app: string;
}

/** One acquisition attempt. */
export interface AcquireCall {
  readonly lock: LockRef;
  readonly mode: LockMode;
  /** The owner's secret token for this mode. */
  readonly token: string;
  /** Lease in milliseconds, counted by the store's clock. */
  readonly leaseMs: number;
  /** The owner's next operation number: a command re-sent with a number the store has seen applies once. */
  readonly seq: number;
  /**
   * A second operation number, reserved for this attempt right after `seq` (so it orders after `seq` and before any
   * later command of the owner): a store that must undo part of the attempt itself (the quorum store undoing the
   * grants of a minority of masters) releases one level with it. A store that never undoes ignores it.
   */
  readonly undoSeq: number;
  /** Readable owner id, recorded with the hold. */
  readonly ownerId: string;
  /** The write token this owner holds on the same lock, or `''`: lets a write owner take the read lock. */
  readonly downgradeToken: string;
  /** Register as a waiter under this id when blocked; `''` does not register (`tryAcquire`). */
  readonly waiterId: string;
  /** Only re-enter a hold `token` already has; never take a new one. */
  readonly reentry: boolean;
  /** Queue in arrival order (fair lock). */
  readonly fair: boolean;
}

/** Why an attempt was not granted. */
export type BlockedBy =
  /** A writer holds the lock. */
  | 'writer'
  /** Readers hold it and a writer asked. */
  | 'readers'
  /** A writer waits: new readers queue behind it (writer preference). */
  | 'waiting-writer'
  /** Re-entry was asked but the token no longer holds the lock. */
  | 'not-held'
  /** Fair waiters arrived first. */
  | 'fair-queue';

export type AcquireReply =
  | { readonly granted: true; readonly fencingToken: number; readonly reentered: boolean }
  | {
      readonly granted: false;
      /** How long until the blocking leases or registrations can have run out, in milliseconds. */
      readonly retryInMs: number;
      readonly blockedBy: BlockedBy;
    };

/**
 * `'ended'`: the hold is gone; `'level'`: one reentrant level released (or this release was applied already);
 * `'not-held'`.
 */
export type ReleaseReply = 'ended' | 'level' | 'not-held';

/** One lease to renew. */
export interface RenewCall {
  readonly lock: LockRef;
  readonly token: string;
  readonly leaseMs: number;
}

/** A registered waiter, for the heartbeat (`keepWaiting`). */
export interface WaitingCall {
  readonly lock: LockRef;
  readonly mode: LockMode;
  readonly waiterId: string;
  readonly fair: boolean;
}

/**
 * `'waiting'`: registration renewed, keep waiting. `'attempt'`: attempt now: the waiter may get in, or its
 * registration is gone (it ran out while the process was stalled; the attempt registers it afresh).
 */
export type WaitingReply = 'waiting' | 'attempt';

/** A wake-up: one named waiter may retry, or every waiting reader may. */
export type WakeUp = { readonly waiterId: string } | 'readers';

/** A listener's place in a lock's wake-up subscription. */
export interface WakeUpSubscription {
  /** `true` when the subscription was confirmed before `listen` returned. */
  readonly live: boolean;
  /** Resolves once the store confirmed the subscription. */
  readonly ready: Promise<void>;
  stop(): void;
}

/** What `ping` found (the public `LockPing`). */
export type StorePing = LockPing;
