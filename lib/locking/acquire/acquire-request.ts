import type { LockRef } from '../../store/lock-store.js';
import type { ResolvedAcquireOptions } from '../settings/engine-settings.js';
import type { LockOwner } from '../holds/owner-context.js';

/** One call of `acquire` / `tryAcquire`, shared by the acquisition of each of its keys. */
export interface AcquireRequest {
  readonly owner: LockOwner;
  /** Valid lock keys, unique and sorted (the lock order). */
  readonly keys: readonly string[];
  readonly options: ResolvedAcquireOptions;
  /** `false` for `tryAcquire`: one attempt, no registration as a waiter. */
  readonly waiting: boolean;
  /** performance.now() by which the call must settle: `waitTimeoutMs` (if waiting) plus `commandTimeoutMs`. */
  readonly settleBy: number;
  /**
   * The store's refs of `keys`, when the caller made them (a semaphore's carries its limit); else `store.lock(key)`.
   */
  readonly refs?: readonly LockRef[];
}
