import { performance } from 'node:perf_hooks';
import type { LockLostError } from '../errors/lock-lost.error.js';
import type { LockRef } from '../redis/lock-store.js';
import type { LockMode } from '../types/lock.types.js';

/**
 * The lane of an owner's commands on one lock in one mode: acquisitions and releases on one lane run one at a time
 * (see `LockOwner.oneAtATime`).
 */
export function laneOf(mode: LockMode, ownerKey: string): string {
  return `${mode}:${ownerKey}`;
}

/** What a hold needs of its owner context (implemented by `LockOwner`). */
export interface HoldOwner {
  /** Readable, non-secret owner id. */
  readonly id: string;
  /** Next operation number of this owner's commands (see `LockOwner.nextSeq`). */
  nextSeq(): number;
  /** Runs `op` once no other command of this owner on `lane` is in flight (see `LockOwner.oneAtATime`). */
  oneAtATime<T>(lane: string, op: () => Promise<T>): Promise<T>;
  /** Forgets `hold` if it is still the owner's current hold of its key and mode. */
  forget(hold: Hold): void;
}

/**
 * One owner's hold on one key in one mode, as the store records it (with a hold count). Reentrant acquisitions
 * share it; each returns its own handle.
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
  /** Local time (performance.now) until which the store is known to keep the lease. */
  validUntil: number;
  /** Local time of the next watchdog renewal. */
  nextRenewAt: number;

  constructor(
    readonly owner: HoldOwner,
    /** Where the owner keeps this hold: one per engine and lock key (see `LockOwner.holds`). */
    readonly ownerKey: string,
    readonly lock: LockRef,
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
    return this.lock.key;
  }

  /** The lane of this hold's commands: one command of an owner per key and mode at a time. */
  get lane(): string {
    return laneOf(this.mode, this.ownerKey);
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

  /** Holding: not ended, not lost. */
  get active(): boolean {
    return !this.ended && !this.lost;
  }
}
