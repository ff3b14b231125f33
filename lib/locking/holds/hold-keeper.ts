import { performance } from 'node:perf_hooks';
import { LockLostError } from '../../errors/lock-lost.error.js';
import type { LockLostReason } from '../../errors/lock-lost.error.js';
import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import { LockClosedError } from '../../errors/lock-closed.error.js';
import { leaseDeadline } from '../../store/drift.js';
import type { LockStore, ReleaseReply, RenewCall } from '../../store/lock-store.js';
import { ranOutInTransit, type Hold } from './hold.js';
import type { DoubtKeeper, HoldDoubt } from './hold-doubt.js';
import type { LeftoverHold, Leftovers } from './leftovers.js';
import { kindOf } from '../events/lock-events.js';
import { ShutdownReport, releaseOnShutdown } from './shutdown-report.js';
import type { LockEventBus, LockLogger } from '../events/lock-events.js';
import type { HoldReleaser } from './lock-handle.js';
import type { LaneWaitLimit } from './deadlines.js';
import { TroubleLog } from './trouble-log.js';
import { Watchdog } from './watchdog.js';

/**
 * The holds of one engine after they were granted: releases, extensions, renewal by the watchdog, doubt (`HoldDoubt`)
 * and loss. A hold leaves it when its last release is done, when it is lost, or at shutdown.
 */
export class HoldKeeper implements HoldReleaser, DoubtKeeper {
  private readonly watchdog: Watchdog;
  private readonly trouble: TroubleLog;
  /** Releases of last levels under way: shutdown lets them finish before the connections close. */
  private readonly releasing = new Set<Promise<unknown>>();
  /** Tells what shutdown waits for (the holds kept), and when it ends. */
  private readonly shutdown: ShutdownReport;

  constructor(
    private readonly store: LockStore,
    private readonly events: LockEventBus,
    private readonly logger: LockLogger,
    private readonly leftovers: Leftovers,
    private readonly commandTimeoutMs: number,
    private readonly doubt: HoldDoubt,
  ) {
    this.trouble = new TroubleLog(logger, () => this.size);
    this.shutdown = new ShutdownReport(logger, () => this.list());
    // Each renewal sends the leases as they are now (`snapshot`): the watchdog counts the deadline from the same ones.
    this.watchdog = new Watchdog((holds) => this.store.renew(holds.map(snapshot)), {
      lost: (hold, reason) => this.markLost(hold, reason),
      renewalFailed: (err, holds) => this.trouble.renewalFailed(err, holds.length),
      behind: (late, sent, leftMs) => this.trouble.behind(late, sent, leftMs),
      confirmed: (hold) => this.doubt.confirmed(hold),
    });
  }

  /** Number of holds kept (and renewed), releases in flight included. */
  get size(): number {
    return this.watchdog.size;
  }

  /** Every hold kept (a copy). */
  list(): Hold[] {
    return this.watchdog.list();
  }

  /** Starts keeping a newly granted hold. */
  track(hold: Hold): void {
    hold.onDeadline = (h) => this.markLost(h, 'lease-expired');
    this.watchdog.add(hold);
    this.doubt.holding();
  }

  /** Has the watchdog renew `holds` now (holds in doubt). */
  renewSoon(holds: readonly Hold[]): void {
    this.watchdog.renewSoon(holds);
  }

  /** Whether the store still records `holds`, their leases left as they are (a 1 ms renewal never shortens one). */
  stillRecorded(holds: readonly Hold[]): Promise<boolean[]> {
    return this.store.renew(holds.map((hold) => ({ lock: hold.lock, token: hold.token, leaseMs: 1 })));
  }

  /**
   * Releases one level of `hold`. `true` when the store released it; `false` if it was no longer held. Until the last
   * release is answered, the watchdog keeps renewing the hold (a release stuck
   * behind a slow connection must not let the lease run out and be reported lost). A release that fails is
   * retried in the background (see `Leftovers`) and rejects with `LockUnavailableError`.
   */
  async releaseHold(hold: Hold): Promise<boolean> {
    if (hold.ended) return false;
    // No local deadline check here: Redis's answer says whether the hold was still there, which is what counts.
    hold.count--;
    const { owner } = hold;
    const limit = this.laneLimit(hold);
    if (hold.count > 0) {
      if (hold.lost) return false;
      const reply = await this.releaseOnLane(hold, limit);
      if (reply === 'not-held') {
        this.markLost(hold, 'not-in-redis');
        return false;
      }
      return true;
    }
    hold.ended = true;
    owner.forget(hold);
    if (hold.lost) {
      this.watchdog.remove(hold);
      // Free whatever of it Redis still has, unless a newer hold of this owner uses the same token now.
      if (!hold.freed && !owner.hold(hold.ownerKey, hold.mode)) {
        hold.freed = true;
        await this.inFlight(
          owner.oneAtATime(hold.lane, () => this.store.release(hold.lock, hold.token, undefined), limit),
        ).catch(() => this.free(hold));
      }
      return false;
    }
    const calledAt = performance.now();
    try {
      const reply = await this.inFlight(this.releaseOnLane(hold, limit));
      if (reply === 'not-held' && !ranOutInTransit(hold, calledAt)) {
        this.markLost(hold, 'not-in-redis');
        return false;
      }
      this.events.emit('released', {
        key: hold.key,
        kind: kindOf(hold.lock),
        mode: hold.mode,
        owner: owner.id,
        heldMs: performance.now() - hold.acquiredAt,
      });
      return true;
    } finally {
      this.watchdog.remove(hold);
    }
  }

  /** `release`, kept among the releases `releaseAll` waits for until it settles. */
  private inFlight<T>(release: Promise<T>): Promise<T> {
    const settled = release.then(noop, noop);
    this.releasing.add(settled);
    void settled.then(() => this.releasing.delete(settled));
    return release;
  }

  /**
   * Releases one level of `hold` on its lane, the operation number taken when its turn comes (commands of one lane
   * must reach the store with increasing numbers). Without an answer, the release is left to `Leftovers`: the same
   * command re-sent until answered, or sent once the lane is free if it never left.
   */
  private async releaseOnLane(hold: Hold, limit: LaneWaitLimit): Promise<ReleaseReply> {
    const { owner } = hold;
    let seq: number | undefined;
    try {
      return await owner.oneAtATime(
        hold.lane,
        () => {
          seq = owner.nextSeq();
          return this.store.release(hold.lock, hold.token, seq, hold.count === 0 ? hold.holdAtLeastMs : 0);
        },
        limit,
      );
    } catch (err) {
      this.leftovers.retryRelease(this.target(hold), seq);
      throw err;
    }
  }

  /** Makes `hold`'s lease run `ms` from now. `false` if the store no longer has the hold. */
  async extendHold(hold: Hold, ms: number): Promise<boolean> {
    const sentAt = performance.now();
    let held: boolean;
    try {
      held = await this.store.extend(hold.lock, hold.token, ms);
    } catch (err) {
      // The extend may have been applied all the same (no answer in time, or replicas that did not confirm it): a
      // shorter lease may now be in force in Redis, so the hold is not trusted beyond it.
      hold.validUntil = Math.min(hold.validUntil, leaseDeadline(sentAt, ms));
      throw err;
    }
    if (!held) {
      this.markLost(hold, 'not-in-redis');
      return false;
    }
    hold.validUntil = leaseDeadline(sentAt, ms);
    if (hold.autoExtend) hold.nextRenewAt = Math.min(hold.nextRenewAt, sentAt + ms / 3);
    this.doubt.confirmed(hold);
    return true;
  }

  /**
   * Declares `hold` lost: aborts its signal, stops renewing it, logs (one line for a storm of losses) and emits
   * `lost`. Once per hold. A hold lost because its lease could not be confirmed is freed in Redis by token right
   * away: its holder was told, so it must not keep the key blocked for the rest of a lease.
   */
  markLost(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (hold.lost) return;
    const error = new LockLostError(hold.key, reason, cause);
    hold.markLost(error);
    hold.owner.forget(hold);
    this.watchdog.remove(hold);
    if (reason === 'not-in-redis') hold.freed = true;
    else if (!hold.ended) this.free(hold);
    this.trouble.lost(error);
    this.events.emit('lost', {
      key: hold.key,
      kind: kindOf(hold.lock),
      mode: hold.mode,
      owner: hold.owner.id,
      heldMs: performance.now() - hold.acquiredAt,
      error,
    });
  }

  /** Ends the local holds of `token` on `key` (released by token, maybe from another process). */
  endByToken(key: string, token: string): void {
    for (const hold of this.watchdog.list()) if (hold.key === key && hold.token === token) this.end(hold);
  }

  /**
   * Declares every local hold on `key` lost (it was force-released). Only holds whose acquisition was sent before
   * the forced release (`sentBefore`, performance.now()): an acquisition sent after it is granted only once the
   * forced release was applied (a waiter it woke; in quorum mode, on the masters that had applied it while a slower
   * one had not yet), so it is a new, valid hold (should it have been overtaken by the forced release all the same,
   * its next renewal finds it gone).
   */
  loseAll(
    key: string,
    sentBefore = Number.POSITIVE_INFINITY,
    which: { readonly token?: string; readonly owner?: string } = {},
  ): void {
    for (const hold of this.watchdog.list()) {
      if (hold.key !== key || hold.sentAt >= sentBefore) continue;
      if (
        (which.token === undefined || hold.token === which.token) &&
        (which.owner === undefined || hold.owner.id === which.owner)
      )
        this.markLost(hold, 'not-in-redis');
    }
  }

  /** Shutdown began: says which holds it waits for when `waiting` (the holders are let finish first). */
  beginShutdown(waiting: boolean): void {
    this.shutdown.begin(waiting);
  }

  /**
   * Shutdown: stops renewing, releases every hold still kept (all levels at once) and lets releases under way finish.
   * Never rejects.
   */
  async releaseAll(): Promise<void> {
    this.shutdown.end();
    const holds = this.watchdog.list().filter((hold) => !hold.ended);
    this.watchdog.stop();
    this.doubt.stop();
    // Each hold ends for its holder before its release is sent: no handle reads "held" once another process can be
    // granted the lock.
    for (const hold of holds) hold.endWith(new LockClosedError(hold.key, 'holding'));
    // The holders' own releases still under way are awaited too (each is bounded by the command timeout): the
    // connections close next, and a release cut off then (its script reloaded after NOSCRIPT, say) would leave the
    // lock held for the rest of its lease.
    const underWay = Promise.allSettled([...this.releasing]);
    await releaseOnShutdown(this.store, holds, this.logger);
    await underWay;
  }

  private end(hold: Hold): void {
    hold.endWith(new LockLostError(hold.key, 'not-in-redis'));
    hold.owner.forget(hold);
    this.watchdog.remove(hold);
  }

  /** Frees `hold` by token in the background, on its lane. */
  private free(hold: Hold): void {
    hold.freed = true;
    this.leftovers.free(this.target(hold));
  }

  private target(hold: Hold): LeftoverHold {
    return { owner: hold.owner, lane: hold.lane, lock: hold.lock, token: hold.token, leaseMs: hold.leaseMs };
  }

  /** A release waits for its lane (a clean-up of an earlier command on it) no longer than one command timeout. */
  private laneLimit(hold: Hold): LaneWaitLimit {
    return {
      until: performance.now() + this.commandTimeoutMs,
      error: () =>
        new LockUnavailableError({
          key: hold.key,
          operation: 'release',
          reason: 'timeout',
          detail: 'an earlier command of this owner on this lock is still unanswered by Redis',
        }),
    };
  }
}

function noop(): void {}

/** A hold's renewal as it is to be sent now. */
function snapshot(hold: Hold): RenewCall {
  return { lock: hold.lock, token: hold.token, leaseMs: hold.leaseMs };
}
