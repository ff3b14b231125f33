import { performance } from 'node:perf_hooks';
import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import { lateAcquireOf } from '../../redis/bounded-lock-store.js';
import type { AcquireCall, LockRef, LockStore } from '../../store/lock-store.js';
import type { HoldOwner } from './hold.js';
import type { LockLogger } from '../events/lock-events.js';
import { errorText } from '../../common/error-text.js';

/** Delay between two attempts to reach Redis for a clean-up, in milliseconds. */
const RETRY_MS = 250;

/** What to clean up: a token's hold on a lock, on an owner's lane. */
export interface LeftoverHold {
  readonly owner: HoldOwner;
  readonly lane: string;
  readonly lock: LockRef;
  readonly token: string;
  /** The lease the hold may have in Redis: after that long, nothing is left to free. */
  readonly leaseMs: number;
}

/**
 * Clean-up, in the background, of what a command with an unknown outcome may have left in Redis: a grant that
 * landed after its caller gave up, a release whose answer never came, a hold declared lost locally that Redis may
 * still keep. The outcome is made known by re-sending the very same command (the store applies a command once per
 * `seq`), then undone level by level; a lost hold is freed by token. Attempts are retried while Redis cannot be
 * reached, for no longer than the hold's lease (after that nothing is left to undo). The owner's lane for that lock
 * stays busy meanwhile, so a clean-up never runs after, and undoes, a newer command of the same owner.
 */
export class Leftovers {
  private readonly tasks = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly store: LockStore,
    private readonly logger: LockLogger,
  ) {}

  /** Clean-ups still running. */
  get size(): number {
    return this.tasks.size;
  }

  /**
   * An acquisition (fresh or re-entry) failed with `failure`: it may still be granted (a timed-out attempt) or have
   * been granted already (a connection lost after sending). Once its outcome is known, a grant is released (one
   * level) and a waiter registration withdrawn.
   */
  undoAcquire(target: LeftoverHold, call: AcquireCall, failure: unknown): void {
    const late = lateAcquireOf(failure);
    this.run(target, async () => {
      let reply = late ? await late.catch(() => undefined) : undefined;
      // The attempt's outcome is learnt by sending it again as a re-entry only (a lock's ACQUIRE then grants nothing
      // new: it answers whether this token holds the lock, the original attempt applied or not), so a key freed since
      // is not taken anew just to be released. Re-sent with `waitForReplicas`, the grant may again lack its replicas:
      // it is known all the same.
      const probe: AcquireCall = { ...call, reentry: true };
      reply ??= await this.untilAnswered(target, 'undo an acquisition', () =>
        this.store.acquire(probe).catch((err: unknown) => {
          const known =
            err instanceof LockUnavailableError && err.reason === 'not-replicated' ? lateAcquireOf(err) : undefined;
          if (known) return known;
          throw err;
        }),
      );
      if (!reply) return;
      if (reply.granted) {
        const seq = target.owner.nextSeq();
        await this.untilAnswered(target, 'undo an acquisition', () => this.store.release(call.lock, call.token, seq));
      } else if (call.waiterId) {
        await this.store.cancelWait(call.lock, call.mode, call.waiterId).catch(() => undefined);
      }
    });
  }

  /**
   * A release of one level got no answer (`seq` given: it is re-sent until Redis answers), or could not be sent
   * (`seq` undefined: it is sent once the lane is free, under a fresh operation number).
   */
  retryRelease(target: LeftoverHold, seq: number | undefined): void {
    this.run(target, async () => {
      const s = seq ?? target.owner.nextSeq();
      await this.untilAnswered(target, 'release', () => this.store.release(target.lock, target.token, s));
    });
  }

  /** Frees every level of the token's hold (a hold lost locally: its holder was told). */
  free(target: LeftoverHold): void {
    this.run(target, async () => {
      await this.untilAnswered(target, 'free a lost lock', () =>
        this.store.release(target.lock, target.token, undefined),
      );
    });
  }

  /** Waits for the running clean-ups, at most until `until` (performance.now()); then leaves them be. */
  async settle(until: number): Promise<void> {
    while (this.tasks.size > 0 && performance.now() < until) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.tasks]),
        new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, until - performance.now())))),
      ]);
      clearTimeout(timer);
    }
  }

  /** Stops retrying (shutdown): attempts in flight finish, none is started. */
  stop(): void {
    this.stopped = true;
  }

  private run(target: LeftoverHold, work: () => Promise<void>): void {
    const task = target.owner
      .occupy(target.lane, work)
      .then(() => undefined)
      .catch((err: unknown) => this.logger.warn(`clean-up of "${target.lock.key}" failed: ${errorText(err)}`));
    this.tasks.add(task);
    void task.then(() => this.tasks.delete(task));
  }

  /**
   * `command`'s answer, retried while Redis is unreachable or slow, for at most the hold's lease; `undefined` when
   * it gave up (logged once).
   */
  private async untilAnswered<T>(
    target: LeftoverHold,
    what: string,
    command: () => Promise<T>,
  ): Promise<T | undefined> {
    const giveUpAt = performance.now() + target.leaseMs;
    while (!this.stopped) {
      try {
        return await command();
      } catch (err) {
        const retryable =
          err instanceof LockUnavailableError && (err.reason === 'timeout' || err.reason === 'unreachable');
        if (!retryable || performance.now() + RETRY_MS >= giveUpAt) {
          this.logger.warn(
            `could not ${what} on "${target.lock.key}" in Redis (its lease frees it within ${target.leaseMs} ms): ${errorText(err)}`,
          );
          return undefined;
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    return undefined;
  }
}
