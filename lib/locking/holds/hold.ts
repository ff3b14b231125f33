import { performance } from 'node:perf_hooks';
import { abortedOf, checkedOnRead } from '../../common/checked-signal.js';
import type { LockLostError } from '../../errors/lock-lost.error.js';
import { leaseDeadline } from '../../store/drift.js';
import type { LockRef } from '../../store/lock-store.js';
import type { LockMode } from '../../types/lock.types.js';
import type { LaneWaitLimit } from './deadlines.js';

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
  oneAtATime<T>(lane: string, op: () => Promise<T>, waitLimit?: LaneWaitLimit): Promise<T>;
  /** Runs `work` on `lane` after its current command, keeping the lane busy meanwhile (see `LockOwner.occupy`). */
  occupy(lane: string, work: () => Promise<unknown>): Promise<unknown>;
  /** Forgets `hold` if it is still the owner's current hold of its key and mode. */
  forget(hold: Hold): void;
  /** The owner's current hold on `ownerKey` in `mode`, if any. */
  hold(ownerKey: string, mode: LockMode): Hold | undefined;
}

/**
 * One owner's hold on one key in one mode, as the store records it (with a hold count). Reentrant acquisitions
 * share it; each returns its own handle.
 */
export class Hold {
  /** Reentrant levels still held locally. */
  count = 1;
  /** Set when the hold ended by release (its last release may still be on its way to the store). */
  ended = false;
  /** Set when the hold was lost while held. */
  lost: LockLostError | undefined;
  /**
   * Why the engine ended the hold rather than its handles (shutdown, a release by token): its handles read it as
   * released and its signal aborts with this, before the release is sent.
   */
  endedBy: Error | undefined;
  /** Its token's hold was (or is being) freed in the store after a loss or a failed release. */
  freed = false;
  /** A renewal of this hold is in flight. */
  renewing = false;
  /** Created on first use of `signal`: most holds end without anyone looking at it. */
  private controller: AbortController | undefined;
  readonly acquiredAt = performance.now();
  /**
   * Local time (performance.now) until which the store is known to keep the lease: from when the last confirmed grant
   * or renewal was sent, for the lease it sent, less the drift allowance (`leaseDeadline`).
   */
  validUntil: number;
  /** Local time of the next watchdog renewal. */
  nextRenewAt: number;
  /** `holdAtLeastMs` of the acquisitions of this hold (the largest): the last release leaves that much held. */
  holdAtLeastMs = 0;
  /** Called when a read finds the local lease deadline passed (set by the keeper: declares the hold lost). */
  onDeadline: ((hold: Hold) => void) | undefined;
  /** Since when (performance.now) the hold is in doubt (see `HoldDoubt`); `undefined` while confirmed. */
  doubtSince: number | undefined;
  /** Told when the hold goes in doubt, back to held, or is lost (handles' `onStateChange`). */
  private watchers: Set<() => void> | undefined;

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
    /** When the acquisition that granted the hold was sent (performance.now()). */
    readonly sentAt: number,
  ) {
    this.validUntil = leaseDeadline(sentAt, leaseMs);
    this.nextRenewAt = sentAt + leaseMs / 3;
  }

  get key(): string {
    return this.lock.key;
  }

  /** The lane of this hold's commands: one command of an owner per key and mode at a time. */
  get lane(): string {
    return laneOf(this.mode, this.ownerKey);
  }

  /** Aborted with the `LockLostError` when this hold is lost, or when read after the local lease deadline. */
  get signal(): AbortSignal {
    this.checkDeadline();
    if (!this.controller) {
      this.controller = new AbortController();
      checkedOnRead(this.controller.signal, () => this.checkDeadline());
    }
    const reason = this.lost ?? this.endedBy;
    if (reason && !abortedOf.call(this.controller.signal)) this.controller.abort(reason);
    return this.controller.signal;
  }

  /**
   * Ends the hold on the engine's own account (shutdown, a release by token), before its release is sent: from now on
   * its handles read `isHeld` false and `state` `'released'`, and `signal` is aborted with `reason`.
   */
  endWith(reason: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (this.lost) return;
    this.endedBy = reason;
    this.controller?.abort(reason);
    this.changed();
  }

  /** Records the loss and aborts `signal` (now, or when it is first asked for). */
  markLost(error: LockLostError): void {
    this.lost = error;
    this.controller?.abort(error);
    this.changed();
  }

  /** Calls `watcher` on each change of the hold's state; returns the function that stops it. */
  watch(watcher: () => void): () => void {
    (this.watchers ??= new Set()).add(watcher);
    return () => this.watchers?.delete(watcher);
  }

  /** Tells the watchers that the hold's state changed (a watcher that throws does not stop the others). */
  changed(): void {
    if (!this.watchers) return;
    for (const watcher of [...this.watchers]) {
      try {
        watcher();
      } catch {
        // a state listener's failure is its own business
      }
    }
  }

  /**
   * Declares the hold lost when the local lease deadline (counted from the last confirmed renewal) has passed,
   * whether or not a timer could run since: the store may have let the lease run out.
   */
  checkDeadline(now = performance.now()): void {
    if (this.lost || this.ended || now < this.validUntil) return;
    this.onDeadline?.(this);
  }

  /** Holding: not ended, not lost, and its lease deadline not passed. */
  get active(): boolean {
    this.checkDeadline();
    return !this.ended && !this.lost;
  }
}

/**
 * Whether a release that found `hold` gone may simply have reached Redis after its lease ran out: the hold was valid
 * when `release()` was called (so the critical section ended under the lock) and its local deadline passed while
 * the release was on its way (e.g. queued behind thousands of commands). The lock is free either way, as the
 * release wanted; it is not reported lost. Had Redis dropped it before that deadline, it would have been taken away
 * (`forceRelease`, data loss), which is a loss.
 */
export function ranOutInTransit(hold: Hold, calledAt: number): boolean {
  return calledAt < hold.validUntil && performance.now() >= hold.validUntil;
}
