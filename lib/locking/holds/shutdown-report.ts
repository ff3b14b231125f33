import { performance } from 'node:perf_hooks';
import type { LockStore } from '../../store/lock-store.js';
import type { Hold } from './hold.js';
import { kindOf } from '../events/lock-events.js';
import type { LockLogger } from '../events/lock-events.js';
import { errorText } from '../../common/error-text.js';

/** How often shutdown says again that it still waits. */
export const SHUTDOWN_REMINDER_MS = 5_000;
/** The most holds named in one line. */
const NAMED = 10;

/**
 * What a shutdown waits for, told to the person who waits: when it begins with locks still held (the application
 * waits for the work holding them to finish), again every few seconds while it waits, and when it ends.
 */
export class ShutdownReport {
  private startedAt: number | undefined;
  private reminder: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: LockLogger,
    private readonly holds: () => readonly Hold[],
  ) {}

  /**
   * Shutdown began. `waiting`: the holders are let finish first (Nest's `beforeApplicationShutdown`, then the
   * application waits for its open requests); `false` when the holds are released at once (`close()` alone).
   */
  begin(waiting: boolean): void {
    const holds = this.live();
    if (!waiting || holds.length === 0) return;
    this.startedAt = performance.now();
    const leaseS = Math.ceil(Math.max(...holds.map((h) => h.leaseMs)) / 1_000);
    this.say(
      `shutting down: waiting for the work that holds ${count(holds)} to finish: ${named(holds)}. New acquisitions ` +
        `are refused meanwhile. There is no limit on this wait here: the application waits for its open requests and ` +
        `running work (a process manager's grace period bounds it); should the process be killed first, Redis frees ` +
        `these locks within ${leaseS} s, when their leases run out.`,
    );
    this.reminder = setInterval(() => {
      const left = this.live();
      if (left.length > 0)
        this.say(`shutting down: still waiting after ${this.elapsed()} for ${count(left)}: ${named(left)}.`);
    }, SHUTDOWN_REMINDER_MS);
    this.reminder.unref();
  }

  /** The holds still kept are about to be released (`close()`). */
  end(): void {
    clearInterval(this.reminder);
    this.reminder = undefined;
    const holds = this.live();
    if (this.startedAt === undefined) {
      // `close()` without a wait before it: releasing what is held is what it is for; said at debug level only.
      if (holds.length > 0) this.logger.debug?.(`closing: releasing ${count(holds)} still held: ${named(holds)}.`);
      return;
    }
    if (holds.length > 0) {
      this.say(`shutting down: releasing ${count(holds)} still held after ${this.elapsed()}: ${named(holds)}.`);
    } else {
      this.say(`shutting down: the work holding locks finished after ${this.elapsed()}.`);
    }
    this.startedAt = undefined;
  }

  private live(): Hold[] {
    return this.holds().filter((h) => !h.ended);
  }

  private elapsed(): string {
    return `${((performance.now() - (this.startedAt ?? performance.now())) / 1_000).toFixed(1)} s`;
  }

  private say(message: string): void {
    if (this.logger.log) this.logger.log(message);
    else this.logger.warn(message);
  }
}

/** "2 locks (3 holds)", "1 lock". */
function count(holds: readonly Hold[]): string {
  const keys = new Set(holds.map((h) => `${kindOf(h.lock)} ${h.key}`)).size;
  const levels = holds.reduce((n, h) => n + h.count, 0);
  return `${keys} lock${keys === 1 ? '' : 's'}${levels === keys ? '' : ` (${levels} holds)`}`;
}

/** `"invoice:7" (write, held 12.0 s), semaphore "export" (held 3.1 s)`, the first few, longest held first. */
function named(holds: readonly Hold[]): string {
  const now = performance.now();
  const sorted = [...holds].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const shown = sorted.slice(0, NAMED).map((h) => {
    const what = kindOf(h.lock) === 'semaphore' ? `semaphore "${h.key}" (` : `"${h.key}" (${h.mode}, `;
    const levels = h.count > 1 ? `, ${h.count} holds` : '';
    return `${what}held ${((now - h.acquiredAt) / 1_000).toFixed(1)} s${levels})`;
  });
  return `${shown.join(', ')}${sorted.length > NAMED ? ` and ${sorted.length - NAMED} more` : ''}`;
}

/** Releases `holds` (every level at once) in parallel; logs one line for those that failed (their leases free them). */
export async function releaseOnShutdown(store: LockStore, holds: readonly Hold[], logger: LockLogger): Promise<void> {
  let failed = 0;
  let lastError: unknown;
  await Promise.all(
    holds.map(async (hold) => {
      try {
        await store.release(hold.lock, hold.token, undefined);
      } catch (err) {
        failed++;
        lastError = err;
      }
    }),
  );
  if (failed > 0) {
    logger.warn(
      `could not release ${failed} lock(s) on shutdown (their leases will free them): ${errorText(lastError)}`,
    );
  }
}
