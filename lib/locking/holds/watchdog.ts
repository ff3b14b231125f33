import { performance } from 'node:perf_hooks';
import type { LockLostReason } from '../../errors/lock-lost.error.js';
import { leaseDeadline } from '../../store/drift.js';
import type { Hold } from './hold.js';

/** Renews a batch of holds in as few round trips as possible; resolves one boolean per hold (false: not held). */
export type RenewBatch = (holds: readonly Hold[]) => Promise<boolean[]>;

/** What the watchdog tells its owner. */
export interface WatchdogListener {
  /** `hold`'s lease could not be confirmed (`lease-expired`) or the store no longer has it (`not-in-redis`). */
  lost(hold: Hold, reason: LockLostReason): void;
  /** A renewal call failed; its holds are retried soon. */
  renewalFailed(err: unknown, holds: readonly Hold[]): void;
  /**
   * Renewals were sent late: `late` of the `sent` holds of one batch had less than a third of their lease left,
   * the closest `leftMs` before its local deadline.
   */
  behind(late: number, sent: number, leftMs: number): void;
  /** A renewal of `hold`, which is in doubt (`doubtSince` set), was confirmed. */
  confirmed?(hold: Hold): void;
}

/** Tuning of the renewal pipeline. */
export interface WatchdogTuning {
  /** Holds per renewal call (the store splits it into script calls). */
  readonly batchSize: number;
  /** Renewal calls in flight at once. */
  readonly maxInFlight: number;
  /** Delay before a failed renewal is tried again, in milliseconds. */
  readonly retryMs: number;
}

const DEFAULT_TUNING: WatchdogTuning = { batchSize: 1_000, maxInFlight: 4, retryMs: 250 };

/**
 * One timer per engine for every hold. Holds with `autoExtend` are renewed every `leaseMs / 3`, batched: a tick
 * collects every hold due within the next sixth of its lease, most urgent first, and sends them in a pipeline of
 * calls (`batchSize` holds each, `maxInFlight` at once). Each hold's local deadline moves on when *its* batch is
 * confirmed, counted from when that batch was sent, so a slow round never expires holds that were renewed; a
 * hold never has two renewals in flight. Every hold, renewed or not, is declared lost once its lease cannot be
 * confirmed valid; a hold that ended (its release on the way) is dropped silently instead.
 */
export class Watchdog {
  private readonly holds = new Set<Hold>();
  private readonly tuning: WatchdogTuning;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Number.POSITIVE_INFINITY;
  /** Holds due for renewal, most urgent first; `next` is the first not yet sent. */
  private queue: Hold[] = [];
  private next = 0;
  private inFlight = 0;
  private stopped = false;

  constructor(
    private readonly renew: RenewBatch,
    private readonly listener: WatchdogListener,
    tuning: Partial<WatchdogTuning> = {},
  ) {
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
  }

  get size(): number {
    return this.holds.size;
  }

  /** Every tracked hold (a copy). */
  list(): Hold[] {
    return [...this.holds];
  }

  add(hold: Hold): void {
    if (this.stopped) return;
    this.holds.add(hold);
    this.scheduleAt(this.dueOf(hold));
  }

  remove(hold: Hold): void {
    this.holds.delete(hold);
    if (this.holds.size === 0) {
      this.clearTimer();
      this.queue = [];
      this.next = 0;
    }
  }

  /** Renews `holds` (those kept, with `autoExtend`, and no renewal in flight) at the next tick, now. */
  renewSoon(holds: readonly Hold[]): void {
    const now = performance.now();
    for (const hold of holds) {
      if (!this.holds.has(hold) || !hold.autoExtend || hold.renewing) continue;
      if (hold.nextRenewAt > now) hold.nextRenewAt = now;
      this.scheduleAt(now);
    }
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
    this.holds.clear();
    this.queue = [];
    this.next = 0;
  }

  private dueOf(hold: Hold): number {
    if (hold.renewing) return hold.validUntil;
    return hold.autoExtend ? Math.min(hold.nextRenewAt, hold.validUntil) : hold.validUntil;
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
  }

  private scheduleAt(due: number): void {
    if (this.stopped || due >= this.timerDue) return;
    this.clearTimer();
    this.timerDue = due;
    this.timer = setTimeout(() => this.tick(), Math.max(0, due - performance.now()));
    this.timer.unref();
  }

  /** One pass over every hold: expire, queue what is due, and set the timer for the earliest next event. */
  private tick(): void {
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const due: Hold[] = [];
    let nextDue = Number.POSITIVE_INFINITY;
    for (const hold of this.holds) {
      if (hold.validUntil <= now) {
        this.holds.delete(hold);
        if (!hold.ended) this.listener.lost(hold, 'lease-expired');
        continue;
      }
      if (!hold.renewing && hold.autoExtend && hold.nextRenewAt <= now + hold.leaseMs / 6) {
        hold.renewing = true;
        due.push(hold);
      }
      const d = this.dueOf(hold);
      if (d < nextDue) nextDue = d;
    }
    if (due.length > 0) {
      due.sort((a, b) => a.validUntil - b.validUntil);
      const waiting = this.queue.slice(this.next);
      this.queue = waiting.length > 0 ? mergeByDeadline(waiting, due) : due;
      this.next = 0;
      this.pump();
    }
    if (nextDue !== Number.POSITIVE_INFINITY) this.scheduleAt(nextDue);
  }

  /** Sends queued holds, `batchSize` per call, while fewer than `maxInFlight` calls are unanswered. */
  private pump(): void {
    while (!this.stopped && this.inFlight < this.tuning.maxInFlight && this.next < this.queue.length) {
      const batch: Hold[] = [];
      while (batch.length < this.tuning.batchSize && this.next < this.queue.length) {
        const hold = this.queue[this.next++];
        if (this.holds.has(hold)) batch.push(hold);
        else hold.renewing = false;
      }
      if (batch.length > 0) void this.send(batch);
    }
    if (this.next >= this.queue.length) {
      this.queue = [];
      this.next = 0;
    }
  }

  /** One renewal call; never rejects (a failure goes to the listener and is retried). */
  private async send(batch: Hold[]): Promise<void> {
    this.inFlight++;
    const sentAt = performance.now();
    let late = 0;
    let leftMs = Number.POSITIVE_INFINITY;
    for (const hold of batch) {
      const left = hold.validUntil - sentAt;
      if (left < hold.leaseMs / 3) {
        late++;
        if (left < leftMs) leftMs = left;
      }
    }
    if (late > 0) this.listener.behind(late, batch.length, leftMs);
    // The leases this call sends: a re-entry may raise a hold's `leaseMs` while the call is in flight, and the
    // deadline must come from what Redis was told.
    const leases = batch.map((hold) => hold.leaseMs);
    try {
      const results = await this.renew(batch);
      if (this.stopped) return;
      batch.forEach((hold, i) => {
        hold.renewing = false;
        if (!this.holds.has(hold)) return;
        if (results[i]) {
          hold.validUntil = leaseDeadline(sentAt, leases[i]);
          hold.nextRenewAt = sentAt + leases[i] / 3;
          this.scheduleAt(hold.nextRenewAt);
          if (hold.doubtSince !== undefined) this.listener.confirmed?.(hold);
        } else {
          this.holds.delete(hold);
          if (!hold.ended) this.listener.lost(hold, 'not-in-redis');
        }
      });
    } catch (err) {
      if (this.stopped) return;
      const holds = batch.filter((hold) => this.holds.has(hold));
      for (const hold of batch) hold.renewing = false;
      if (holds.length > 0) this.listener.renewalFailed(err, holds);
      // Try again soon; the lease check still declares a hold lost if Redis stays unreachable. A retry that could
      // only come at or after the lease's end is not sent: the hold expires then.
      const retryAt = performance.now() + this.tuning.retryMs;
      for (const hold of holds) {
        hold.nextRenewAt = retryAt < hold.validUntil ? retryAt : Number.POSITIVE_INFINITY;
        this.scheduleAt(this.dueOf(hold));
      }
    } finally {
      this.inFlight--;
      this.pump();
    }
  }
}

/** Merges two lists sorted by `validUntil` into one. */
function mergeByDeadline(a: Hold[], b: Hold[]): Hold[] {
  const out: Hold[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i].validUntil <= b[j].validUntil)) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}
