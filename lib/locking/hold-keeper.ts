import { performance } from 'node:perf_hooks';
import { LockLostError } from '../errors/lock-lost.error.js';
import type { LockLostReason } from '../errors/lock-lost.error.js';
import type { LockStore } from '../redis/lock-store.js';
import type { Hold } from './hold.js';
import { errorText } from './lock-events.js';
import type { LockEventBus, LockLogger } from './lock-events.js';
import type { HoldReleaser } from './lock-handle.js';
import { Watchdog } from './watchdog.js';

/**
 * The holds of one engine after they were granted: releases, extensions, renewal by the watchdog, and loss. A
 * hold leaves it when its last level is released, when it is lost, or at shutdown.
 */
export class HoldKeeper implements HoldReleaser {
  private readonly watchdog: Watchdog;

  constructor(
    private readonly store: LockStore,
    private readonly events: LockEventBus,
    private readonly logger: LockLogger,
  ) {
    this.watchdog = new Watchdog(
      (holds) => this.store.renew(holds),
      (hold, reason) => this.markLost(hold, reason),
      (err, holds) => this.logger.warn(`lease renewal of ${holds.length} lock(s) failed, retrying: ${errorText(err)}`),
    );
  }

  /** Number of holds kept (and renewed). */
  get size(): number {
    return this.watchdog.size;
  }

  /** Every hold kept (a copy). */
  list(): Hold[] {
    return this.watchdog.list();
  }

  /** Starts keeping a newly granted hold. */
  track(hold: Hold): void {
    this.watchdog.add(hold);
  }

  /** Releases one level of `hold`. `true` when the store released it; `false` if it was no longer held. */
  async releaseHold(hold: Hold): Promise<boolean> {
    if (hold.ended) return false;
    hold.count--;
    const last = hold.count <= 0;
    if (last) this.end(hold);
    if (hold.lost) return false;
    const { owner } = hold;
    const reply = await owner.oneAtATime(hold.lane, () => this.store.release(hold.lock, hold.token, owner.nextSeq()));
    if (reply === 'not-held') {
      this.markLost(hold, 'not-in-redis');
      return false;
    }
    if (last) this.events.emit('released', { key: hold.key, mode: hold.mode, owner: owner.id, heldMs: performance.now() - hold.acquiredAt });
    return true;
  }

  /** Makes `hold`'s lease run `ms` from now. `false` if the store no longer has the hold. */
  async extendHold(hold: Hold, ms: number): Promise<boolean> {
    const sentAt = performance.now();
    if (!(await this.store.extend(hold.lock, hold.token, ms))) {
      this.markLost(hold, 'not-in-redis');
      return false;
    }
    hold.validUntil = sentAt + ms;
    if (hold.autoExtend) hold.nextRenewAt = Math.min(hold.nextRenewAt, sentAt + ms / 3);
    return true;
  }

  /** Declares `hold` lost: aborts its signal, stops renewing it, logs and emits `lost`. Once per hold. */
  markLost(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (hold.lost) return;
    const error = new LockLostError(hold.key, reason, cause);
    hold.markLost(error);
    hold.owner.forget(hold);
    this.watchdog.remove(hold);
    this.logger.warn(error.message);
    this.events.emit('lost', { key: hold.key, mode: hold.mode, owner: hold.owner.id, heldMs: performance.now() - hold.acquiredAt, error });
  }

  /** Ends the local holds of `token` on `key` (released by token, maybe from another process). */
  endByToken(key: string, token: string): void {
    for (const hold of this.watchdog.list()) if (hold.key === key && hold.token === token) this.end(hold);
  }

  /** Declares every local hold on `key` lost (it was force-released). */
  loseAll(key: string): void {
    for (const hold of this.watchdog.list()) if (hold.key === key) this.markLost(hold, 'not-in-redis');
  }

  /** Shutdown: stops renewing and releases every hold still kept, all levels at once. Never rejects. */
  async releaseAll(): Promise<void> {
    const holds = this.watchdog.list();
    this.watchdog.stop();
    await Promise.all(
      holds.map(async (hold) => {
        hold.ended = true;
        try {
          await this.store.release(hold.lock, hold.token, undefined);
        } catch (err) {
          this.logger.warn(`could not release "${hold.key}" on shutdown (its lease will free it): ${errorText(err)}`);
        }
      }),
    );
  }

  private end(hold: Hold): void {
    hold.ended = true;
    hold.owner.forget(hold);
    this.watchdog.remove(hold);
  }
}
