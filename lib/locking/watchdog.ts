import { performance } from 'node:perf_hooks';
import type { LockLostReason } from '../errors/lock-lost.error.js';
import type { Hold } from './hold.js';

/** Renews a batch of holds in as few round trips as possible; resolves one boolean per hold (false: not held). */
export type RenewBatch = (holds: readonly Hold[]) => Promise<boolean[]>;

/**
 * One timer per engine for every hold. Holds with `autoExtend` are renewed every `leaseMs / 3`, batched: a
 * tick renews every hold due within the next sixth of its lease, so thousands of holds cost a handful of
 * commands per tick. Every hold, renewed or not, is declared lost once its lease cannot be confirmed valid.
 */
export class Watchdog {
  private readonly holds = new Set<Hold>();
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Number.POSITIVE_INFINITY;
  private inFlight = false;
  private stopped = false;

  constructor(
    private readonly renew: RenewBatch,
    private readonly onLost: (hold: Hold, reason: LockLostReason, cause?: unknown) => void,
    private readonly onError: (err: unknown, holds: readonly Hold[]) => void,
  ) {}

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
    if (this.holds.size === 0) this.clearTimer();
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
    this.holds.clear();
  }

  private dueOf(hold: Hold): number {
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

  private reschedule(): void {
    this.clearTimer();
    let due = Number.POSITIVE_INFINITY;
    for (const hold of this.holds) {
      const d = this.inFlight ? hold.validUntil : this.dueOf(hold);
      if (d < due) due = d;
    }
    if (due !== Number.POSITIVE_INFINITY) this.scheduleAt(due);
  }

  private tick(): void {
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const due: Hold[] = [];
    for (const hold of this.holds) {
      if (hold.validUntil <= now) {
        this.holds.delete(hold);
        this.onLost(hold, 'lease-expired');
      } else if (hold.autoExtend && hold.nextRenewAt <= now + hold.leaseMs / 6) {
        due.push(hold);
      }
    }
    // renewNow never rejects: a failed renewal goes to onError and is retried.
    if (due.length > 0 && !this.inFlight) void this.renewNow(due, now);
    this.reschedule();
  }

  private async renewNow(batch: Hold[], sentAt: number): Promise<void> {
    this.inFlight = true;
    try {
      const results = await this.renew(batch);
      batch.forEach((hold, i) => {
        if (!this.holds.has(hold)) return;
        if (results[i]) {
          hold.validUntil = sentAt + hold.leaseMs;
          hold.nextRenewAt = sentAt + hold.leaseMs / 3;
        } else {
          this.holds.delete(hold);
          this.onLost(hold, 'not-in-redis');
        }
      });
    } catch (err) {
      this.onError(err, batch);
      // Try again soon; the lease check above still declares the hold lost if Redis stays unreachable. A retry that
      // could only come at or after the lease's end is not sent: the hold expires then.
      const retryAt = performance.now() + 250;
      for (const hold of batch) hold.nextRenewAt = retryAt < hold.validUntil ? retryAt : Number.POSITIVE_INFINITY;
    } finally {
      this.inFlight = false;
      this.reschedule();
    }
  }
}
