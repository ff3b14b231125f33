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
  /** Created on first use of `signal`: most holds end without anyone looking at it. */
  private controller: AbortController | undefined;
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

  /** Aborted with the `LockLostError` when this hold is lost. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.lost && !this.controller.signal.aborted) this.controller.abort(this.lost);
    return this.controller.signal;
  }

  /** Records the loss and aborts `signal` (now, or when it is first asked for). */
  markLost(error: LockLostError): void {
    this.lost = error;
    this.controller?.abort(error);
  }

  get key(): string {
    return this.keys.key;
  }

  /** Holding: not ended, not lost. */
  get active(): boolean {
    return !this.ended && !this.lost;
  }
}
