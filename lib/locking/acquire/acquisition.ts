import { performance } from 'node:perf_hooks';
import { LockAcquireTimeoutError } from '../../errors/lock-acquire-timeout.error.js';
import { LockClosedError } from '../../errors/lock-closed.error.js';
import { LockConfigError } from '../../errors/lock-config.error.js';
import { LockLostError } from '../../errors/lock-lost.error.js';
import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import { LockUpgradeError } from '../../errors/lock-upgrade.error.js';
import type { AcquireCall, AcquireReply, LockRef, LockStore } from '../../store/lock-store.js';
import { isPermitRef } from '../../store/permit-store.js';
import type { LockHandle } from '../../types/lock.types.js';
import { Hold, laneOf } from '../holds/hold.js';
import type { HoldKeeper } from '../holds/hold-keeper.js';
import type { Leftovers } from '../holds/leftovers.js';
import { kindOf } from '../events/lock-events.js';
import type { LockEventBus, LockLogger } from '../events/lock-events.js';
import { LockHandleImpl } from '../holds/lock-handle.js';
import type { ResolvedAcquireOptions } from '../settings/engine-settings.js';
import type { LaneWaitLimit } from '../holds/deadlines.js';
import type { AcquireRequest } from './acquire-request.js';
import { untilSubscribed } from './waiting.js';
import type { Wait, WaitingRoom } from './waiting.js';
import { errorText } from '../../common/error-text.js';

export type { AcquireRequest } from './acquire-request.js';

/** What one key's acquisition gave. */
interface KeyGrant {
  readonly hold: Hold;
  readonly reentrant: boolean;
}

/**
 * Takes locks for one engine: all keys of a request or none, in sorted order; re-entry of the owner's own holds;
 * fresh acquisitions that wait for wake-ups. Holds it grants go to the `HoldKeeper`.
 */
export class Acquirer {
  constructor(
    private readonly store: LockStore,
    private readonly keeper: HoldKeeper,
    private readonly room: WaitingRoom,
    private readonly events: LockEventBus,
    private readonly logger: LockLogger,
    private readonly instanceId: string,
    /** Whether the engine is shutting down: new holds are refused then. */
    private readonly closing: () => boolean,
    private readonly leftovers: Leftovers,
    private readonly commandTimeoutMs: number,
  ) {}

  /** The handle, or `null` when `tryAcquire` found a key taken. */
  async acquire(request: AcquireRequest): Promise<LockHandle | null> {
    request.options.signal?.throwIfAborted();
    const start = performance.now();
    const holds: Hold[] = [];
    let reentrant = true;
    try {
      // All or nothing, in sorted order: two callers locking [a, b] and [b, a] cannot deadlock.
      for (const [i, key] of request.keys.entries()) {
        const got = await this.acquireKey(request, request.refs?.[i] ?? this.store.lock(key), start);
        if (!got) {
          await this.undo(holds);
          return null;
        }
        holds.push(got.hold);
        reentrant &&= got.reentrant;
      }
    } catch (err) {
      await this.undo(holds);
      throw err;
    }
    return new LockHandleImpl(this.keeper, request.owner, holds, request.options.mode, reentrant);
  }

  private async undo(holds: readonly Hold[]): Promise<void> {
    for (const hold of [...holds].reverse()) {
      await this.keeper
        .releaseHold(hold)
        .catch((err: unknown) =>
          this.logger.warn(`releasing "${hold.key}" after a failed acquisition failed: ${errorText(err)}`),
        );
    }
  }

  private acquireKey(request: AcquireRequest, lock: LockRef, start: number): Promise<KeyGrant | null> {
    const { owner, options } = request;
    const ownerKey = `${this.instanceId}|${lock.key}`;
    // Parallel branches of one owner context: the first acquisition (or a release in flight) finishes, then the
    // next one re-enters or starts afresh.
    const lane = laneOf(options.mode, ownerKey);
    return owner.oneAtATime(
      lane,
      async () => {
        const existing = owner.hold(ownerKey, options.mode);
        if (existing) return { hold: await this.reenter(existing, options, start), reentrant: true };
        if (options.mode === 'write' && owner.hold(ownerKey, 'read')) throw new LockUpgradeError(lock.key);
        const hold = await this.acquireFresh(request, lock, ownerKey, lane, start);
        return hold ? { hold, reentrant: false } : null;
      },
      this.laneLimit(lock.key, request.settleBy),
    );
  }

  /** How long an acquisition may wait for its lane: the clean-up of an earlier command with its token runs there. */
  private laneLimit(key: string, until: number): LaneWaitLimit {
    return {
      until,
      error: () =>
        new LockUnavailableError({
          key,
          operation: 'acquire',
          reason: 'timeout',
          detail: 'an earlier command of this owner on this lock is still unanswered by Redis',
        }),
    };
  }

  private async reenter(hold: Hold, options: ResolvedAcquireOptions, start: number): Promise<Hold> {
    if (hold.lost) throw hold.lost;
    hold.count++;
    const call: AcquireCall = {
      lock: hold.lock,
      mode: hold.mode,
      token: hold.token,
      leaseMs: options.leaseMs,
      seq: hold.owner.nextSeq(),
      undoSeq: hold.owner.nextSeq(),
      ownerId: hold.owner.id,
      downgradeToken: '',
      waiterId: '',
      reentry: true,
      fair: false,
    };
    try {
      let reply: AcquireReply;
      try {
        reply = await this.store.acquire(call);
      } catch (err) {
        // A level may be added in Redis after all: once known, it is released again.
        this.leftovers.undoAcquire(
          { owner: hold.owner, lane: hold.lane, lock: hold.lock, token: hold.token, leaseMs: hold.leaseMs },
          call,
          err,
        );
        throw err;
      }
      if (!reply.granted) {
        hold.count--;
        this.keeper.markLost(hold, 'not-in-redis');
        throw hold.lost ?? new LockLostError(hold.key, 'not-in-redis');
      }
    } catch (err) {
      if (err !== hold.lost) hold.count--;
      throw err;
    }
    if (options.leaseMs > hold.leaseMs) hold.leaseMs = options.leaseMs;
    if (options.holdAtLeastMs > hold.holdAtLeastMs) hold.holdAtLeastMs = options.holdAtLeastMs;
    this.events.emit('acquired', {
      key: hold.key,
      kind: kindOf(hold.lock),
      mode: hold.mode,
      owner: hold.owner.id,
      waitedMs: performance.now() - start,
      fencingToken: hold.fencingToken,
      reentrant: true,
    });
    return hold;
  }

  private async acquireFresh(
    request: AcquireRequest,
    lock: LockRef,
    ownerKey: string,
    lane: string,
    start: number,
  ): Promise<Hold | null> {
    const { owner, options, waiting } = request;
    const { mode } = options;
    const deadline = waiting ? start + options.waitTimeoutMs : start;
    const token = owner.token(mode);
    const downgradeToken = mode === 'read' ? (owner.hold(ownerKey, 'write')?.token ?? '') : '';
    const waiterId = waiting ? this.room.nextWaiterId() : '';
    // The waiting machinery is set up only when needed, except that when this process already receives the lock's
    // wake-ups, a waiter listens before its first attempt: no wake-up is missed.
    let wait: Wait | undefined =
      waiting && this.room.isLive(lock)
        ? this.room.enter(lock, mode, options.fair, waiterId, owner.id, start)
        : undefined;
    let registered = false;
    let contended = false;
    let granted = false;
    try {
      for (;;) {
        if (this.closing()) throw new LockClosedError(lock.key);
        // Giving up is final: no attempt is sent once the caller aborted (e.g. while the subscription was awaited).
        options.signal?.throwIfAborted();
        wait?.rearm();
        const sentAt = performance.now();
        const call: AcquireCall = {
          lock,
          mode,
          token,
          leaseMs: options.leaseMs,
          seq: owner.nextSeq(),
          undoSeq: owner.nextSeq(),
          ownerId: owner.id,
          downgradeToken,
          waiterId,
          reentry: false,
          fair: options.fair,
        };
        let reply: AcquireReply;
        try {
          reply = await this.store.acquire(call);
        } catch (err) {
          // The attempt may land in Redis after all (or have landed before the connection failed): undo it. Not when
          // Redis answered that the key is the other kind's (a lock's or a semaphore's): nothing was changed.
          if (!(err instanceof LockConfigError))
            this.leftovers.undoAcquire({ owner, lane, lock, token, leaseMs: options.leaseMs }, call, err);
          throw err;
        }
        if (reply.granted) {
          granted = true;
          const hold = new Hold(
            owner,
            ownerKey,
            lock,
            mode,
            token,
            reply.fencingToken,
            options.leaseMs,
            options.autoExtend,
            sentAt,
          );
          hold.holdAtLeastMs = options.holdAtLeastMs;
          owner.keep(hold);
          this.keeper.track(hold);
          this.events.emit('acquired', {
            key: lock.key,
            kind: kindOf(lock),
            mode,
            owner: owner.id,
            waitedMs: performance.now() - start,
            fencingToken: reply.fencingToken,
            reentrant: false,
          });
          return hold;
        }
        registered = waiting;
        if (waiting) wait?.markRegistered();
        if (!contended) {
          contended = true;
          this.events.emit('contended', { key: lock.key, kind: kindOf(lock), mode, owner: owner.id });
        }
        if (!waiting) return null;
        const remaining = deadline - performance.now();
        if (remaining <= 0) {
          const waitedMs = performance.now() - start;
          this.events.emit('timeout', { key: lock.key, kind: kindOf(lock), mode, owner: owner.id, waitedMs });
          throw new LockAcquireTimeoutError({
            key: lock.key,
            keys: request.keys,
            mode,
            waitedMs,
            waitTimeoutMs: options.waitTimeoutMs,
            limit: isPermitRef(lock) ? lock.limit : undefined,
          });
        }
        if (!wait) {
          // Listen, then try again at once: a release between the attempt above and the subscription is not lost.
          wait = this.room.enter(lock, mode, options.fair, waiterId, owner.id, start);
          wait.markRegistered();
          await untilSubscribed(wait, Math.min(remaining, this.commandTimeoutMs), options.signal);
          continue;
        }
        // Sleep until woken, until the blocking leases can have run out, or until the deadline.
        await wait.sleep(Math.min(reply.retryInMs + 1, remaining), options.signal);
        options.signal?.throwIfAborted();
      }
    } finally {
      wait?.leave();
      if (registered && !granted) await this.cancelWait(lock, request, waiterId);
    }
  }

  private async cancelWait(lock: LockRef, request: AcquireRequest, waiterId: string): Promise<void> {
    try {
      await this.store.cancelWait(lock, request.options.mode, waiterId);
    } catch (err) {
      // The registration expires by itself within one lease.
      this.logger.warn(`could not withdraw a waiter from "${lock.key}": ${errorText(err)}`);
    }
  }
}
