import type { HoldState, LockHolderInfo } from './lock.types.js';

/** Options of `acquirePermit` / `tryAcquirePermit` / `withPermit` / `@Semaphore`. */
export interface PermitOptions {
  /**
   * How many holders the semaphore allows at once (each call takes one permit). Required, an integer from 1 to
   * 100,000. The first acquisition stores it with the key; while the semaphore is in use the stored limit applies to
   * every caller (a caller naming another one is warned once): see `setPermitLimit`.
   */
  readonly limit: number;
  /** Lease of the permit, in milliseconds. Default: the module's `leaseMs` (30,000). */
  readonly leaseMs?: number;
  /** Renew the lease while held (the watchdog, batched with the locks'). Default: the module's `autoExtend` (true). */
  readonly autoExtend?: boolean;
  /** How long to wait for a permit, in milliseconds. Default: the module's `waitTimeoutMs` (10,000). */
  readonly waitTimeoutMs?: number;
  /** Gives up waiting when aborted (rejects with the signal's reason). */
  readonly signal?: AbortSignal;
  /** Serve waiters in arrival order. Default: false. */
  readonly fair?: boolean;
}

/** One permit of a semaphore, held by this process. */
export interface PermitHandle {
  readonly key: string;
  /** The limit in force for this key (the stored one, which may differ from the one asked for). */
  readonly limit: number;
  /** The permit's secret token (what `forceReleasePermits(key, token)` takes to free this permit alone). */
  readonly token: string;
  /**
   * Strictly increasing per key across grants. With `limit` 1 it fences like a lock's; with more, holders run at once,
   * so a store can use it to order their writes, not to refuse all but the newest.
   */
  readonly fencingToken: number;
  /** Aborts when the permit is lost (lease ran out, force-released, Redis lost it). */
  readonly signal: AbortSignal;
  /** Not released, and not lost (also while it is in doubt). */
  readonly isHeld: boolean;
  /** `'held'`, `'in-doubt'`, `'lost'` or `'released'`, as a lock's (`LockHandle.state`). */
  readonly state: HoldState;
  /** Calls `listener` with the new `state` each time it changes while held; returns the function that stops it. */
  onStateChange(listener: (state: HoldState) => void): () => void;
  /** Gives the permit back; `false` if it was no longer held. */
  release(): Promise<boolean>;
  /** Makes the lease run `ms` (default: its lease) from now. @throws {LockNotHeldError} when no longer held. */
  extend(ms?: number): Promise<void>;
  /** `release()` for `await using permit = await locks.acquirePermit(…)`; quiet for a permit released or lost. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A semaphore as Redis has it (`inspectPermits`). */
export interface PermitInfo {
  readonly key: string;
  /** The stored limit. */
  readonly limit: number;
  /** Permits held now (may exceed `limit` for a while after it was lowered). */
  readonly used: number;
  /** Every holder (`mode` is `'write'`, `holdCount` 1). */
  readonly holders: readonly LockHolderInfo[];
  /** Live waiters, fair and not. */
  readonly waiting: number;
  /** The last fencing token handed out for this key. */
  readonly fencingToken: number;
}
