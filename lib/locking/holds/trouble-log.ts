import { performance } from 'node:perf_hooks';
import type { LockLostError } from '../../errors/lock-lost.error.js';
import type { LockLogger } from '../events/lock-events.js';
import { errorText } from '../../common/error-text.js';

/** Keys named in one aggregated line. */
const KEYS_SHOWN = 5;

/**
 * The watchdog's trouble, logged so that a storm stays readable: lost locks reported in the same turn of the event
 * loop make one line; renewal failures and renewals running late make at most one line per `intervalMs` each,
 * with how many were left out since.
 */
export class TroubleLog {
  private lostBatch: LockLostError[] = [];
  private renewal = { lastAt: Number.NEGATIVE_INFINITY, skipped: 0 };
  private late = { lastAt: Number.NEGATIVE_INFINITY, renewals: 0, closestMs: Number.POSITIVE_INFINITY };

  constructor(
    private readonly logger: LockLogger,
    private readonly heldCount: () => number,
    private readonly intervalMs = 10_000,
  ) {}

  lost(error: LockLostError): void {
    this.lostBatch.push(error);
    if (this.lostBatch.length === 1) setImmediate(() => this.flushLost());
  }

  renewalFailed(err: unknown, holds: number): void {
    const now = performance.now();
    if (now - this.renewal.lastAt < this.intervalMs) {
      this.renewal.skipped++;
      return;
    }
    const skipped = this.renewal.skipped;
    this.renewal = { lastAt: now, skipped: 0 };
    this.logger.warn(
      `lease renewal of ${holds} lock(s) failed, retrying: ${errorText(err)}` +
        (skipped > 0 ? ` (${skipped} more failed renewal call(s) since the last report)` : ''),
    );
  }

  behind(late: number, _sent: number, leftMs: number): void {
    this.late.renewals += late;
    this.late.closestMs = Math.min(this.late.closestMs, leftMs);
    const now = performance.now();
    if (now - this.late.lastAt < this.intervalMs) return;
    const { renewals, closestMs } = this.late;
    this.late = { lastAt: now, renewals: 0, closestMs: Number.POSITIVE_INFINITY };
    this.logger.warn(
      `lease renewal is falling behind: ${renewals} renewal(s) went out with less than a third of the lease left ` +
        `(the closest ${Math.max(0, Math.round(closestMs))} ms before its lease ran out) while this process holds ` +
        `${this.heldCount()} lock(s); Redis or this process is too slow for that many locks: raise leaseMs, or hold fewer per process`,
    );
  }

  private flushLost(): void {
    const batch = this.lostBatch;
    this.lostBatch = [];
    if (batch.length === 1) {
      this.logger.warn(batch[0].message);
      return;
    }
    const reasons = new Map<string, number>();
    for (const e of batch) reasons.set(e.reason, (reasons.get(e.reason) ?? 0) + 1);
    const why = [...reasons].map(([reason, n]) => `${n} ${reason}`).join(', ');
    const keys = batch
      .slice(0, KEYS_SHOWN)
      .map((e) => `"${e.key}"`)
      .join(', ');
    const more = batch.length > KEYS_SHOWN ? ` and ${batch.length - KEYS_SHOWN} more` : '';
    this.logger.warn(`lost ${batch.length} locks at once (${why}): ${keys}${more}`);
  }
}
