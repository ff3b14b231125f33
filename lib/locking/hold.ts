import { performance } from 'node:perf_hooks';
import type { LockLostError } from '../errors/lock-lost.error.js';
import type { LockKeys } from '../redis/key-layout.js';
import type { LockMode } from './lock.types.js';
import type { LockOwner } from './owner-context.js';

/**
 * One owner's hold on one key in one mode, as Redis records it (a `h:<token>` field with a hold count).
 * Reentrant acquisitions share it; each returns its own handle.
 */
export class Hold {
  /** Reentrant levels still held locally. */
  count = 1;
  /** Set when the hold ended by release. */
  ended = false;
  /** Set when the hold was lost while held. */
  lost: LockLostError | undefined;
  readonly controller = new AbortController();
  readonly acquiredAt = performance.now();
  /** Local time (performance.now) until which Redis is known to keep the lease. */
  validUntil: number;
  /** Local time of the next watchdog renewal. */
  nextRenewAt: number;

  constructor(
    readonly owner: LockOwner,
    readonly keys: LockKeys,
    readonly mode: LockMode,
    readonly token: string,
    readonly fencingToken: number,
    public leaseMs: number,
    readonly autoExtend: boolean,
    sentAt: number,
  ) {
    this.validUntil = sentAt + leaseMs;
    this.nextRenewAt = sentAt + leaseMs / 3;
  }

  get key(): string {
    return this.keys.key;
  }

  /** Holding: not ended, not lost. */
  get active(): boolean {
    return !this.ended && !this.lost;
  }
}
