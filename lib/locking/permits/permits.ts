import { LockClosedError } from '../../errors/lock-closed.error.js';
import { LockConfigError } from '../../errors/lock-config.error.js';
import { PermitDeadlockError } from '../../errors/permit-deadlock.error.js';
import { validateLockKey } from '../../store/lock-key.js';
import type { LockOperation } from '../../errors/lock-unavailable.error.js';
import type { PermitHolder, PermitRef, PermitStore } from '../../store/permit-store.js';
import type { LockHandle } from '../../types/lock.types.js';
import type { PermitHandle, PermitInfo, PermitOptions } from '../../types/permit.types.js';
import type { Acquirer } from '../acquire/acquisition.js';
import type { LockLogger } from '../events/lock-events.js';
import { resolveAcquireOptions } from '../settings/engine-settings.js';
import type { LockEngineSettings } from '../settings/engine-settings.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { LockOwner } from '../holds/owner-context.js';
import { PermitHandleImpl } from './permit-handle.js';
import { errorText } from '../../common/error-text.js';

/** The largest `limit` accepted. */
export const MAX_PERMIT_LIMIT = 100_000;

/** Permits held by the enclosing `withPermit` / `@Semaphore` calls of the current async context, per engine and key. */
type PermitFrame = ReadonlyMap<string, number>;
const FRAMES_KEY = Symbol.for('nest-redis-locks.permit-frames');
type GlobalWithFrames = typeof globalThis & { [FRAMES_KEY]?: AsyncLocalStorage<PermitFrame> };

function frames(): AsyncLocalStorage<PermitFrame> {
  const g = globalThis as GlobalWithFrames;
  return (g[FRAMES_KEY] ??= new AsyncLocalStorage<PermitFrame>());
}

/**
 * Runs `fn` inside `permit`'s call (of the engine `instanceId`): acquisitions of the same semaphore made in `fn`,
 * however deeply, count it as held by an enclosing call (a nested acquisition that could never be granted is refused).
 * Work running beside it (another branch of a `Promise.all`) does not.
 */
export function runInPermitFrame<T>(instanceId: string, permit: PermitHandle, fn: () => T): T {
  const id = `${instanceId}|${permit.key}`;
  const outer = frames().getStore();
  const inner = new Map(outer);
  inner.set(id, (outer?.get(id) ?? 0) + 1);
  return frames().run(inner, fn);
}

/** What the semaphore room uses of its engine. */
export interface PermitEngineParts {
  readonly settings: LockEngineSettings;
  readonly logger: LockLogger;
  readonly instanceId: string;
  /** The engine's acquirer: waiting, wake-ups, timeouts, the watchdog and the hold keeper serve permits too. */
  readonly acquirer: Acquirer;
  /** The permit store (`undefined`: this store has no semaphores, e.g. quorum mode, with the reason). */
  readonly permits: PermitStore | undefined;
  readonly unsupported: string | undefined;
  /** Tracks an acquisition (so `close` waits for it) and bounds it by `boundMs` (the engine's own bound). */
  readonly track: (acquisition: Promise<LockHandle | null>, boundMs: number, key: string) => Promise<LockHandle | null>;
  /** Bounds one store call by the command timeout (every failure a `LockError`). */
  readonly bound: <T>(pending: Promise<T>, operation: LockOperation, key: string) => Promise<T>;
  readonly closed: () => boolean;
  /** Marks this process's holds of `key` (of one token or owner only, if given) sent before `sentBefore` lost. */
  readonly loseAll: (key: string, sentBefore: number, which: PermitHolder) => void;
}

/**
 * Semaphores on top of the lock engine: at most `limit` holders per key. Each permit is one hold of a fresh owner
 * (so never re-entered), taken by the engine's `Acquirer` on the store's `PermitRef`: waiting, wake-ups, liveness,
 * timeouts, aborts, the batched watchdog, loss signals and the shutdown release are the locks' own.
 */
export class Permits {
  /** `key|limit` pairs already warned about (the stored limit differs from the one asked for). */
  private readonly warned = new Set<string>();

  constructor(private readonly parts: PermitEngineParts) {}

  acquire(key: string, options: PermitOptions, waiting: boolean): Promise<PermitHandle | null> {
    const mine = frames().getStore()?.get(`${this.parts.instanceId}|${key}`) ?? 0;
    // Inside enclosing calls holding as many permits as the limit this process last saw, a wait could never end,
    // unless another instance raised the limit since: one attempt (which reads the stored limit) tells.
    if (waiting && mine > 0 && mine >= (this.store().storedLimit(key) ?? options.limit)) {
      return this.acquire(key, options, false).then((permit) => {
        if (permit) return permit;
        const limit = this.store().storedLimit(key) ?? options.limit;
        if (mine >= limit) throw new PermitDeadlockError(key, limit, mine);
        return this.acquireNow(key, options, true);
      });
    }
    return this.acquireNow(key, options, waiting);
  }

  private acquireNow(key: string, options: PermitOptions, waiting: boolean): Promise<PermitHandle | null> {
    let acquisition: Promise<LockHandle | null>;
    let ref: PermitRef;
    try {
      ref = this.ref(key, options);
      const resolved = resolveAcquireOptions(this.parts.settings, { ...permitOnly(options), mode: 'write' }, key);
      const boundMs = (waiting ? resolved.waitTimeoutMs : 0) + this.parts.settings.commandTimeoutMs;
      const request = {
        owner: new LockOwner(this.parts.instanceId),
        keys: [key],
        refs: [ref],
        options: resolved,
        waiting,
        settleBy: performance.now() + boundMs,
      };
      acquisition = this.parts.track(this.parts.acquirer.acquire(request), boundMs, key);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return acquisition.then((handle) => handle && this.handle(handle, ref));
  }

  withPermit<T>(key: string, fn: (permit: PermitHandle) => T | Promise<T>, options: PermitOptions): Promise<T> {
    return (async () => {
      const permit = (await this.acquire(key, options, true)) as PermitHandle;
      try {
        return await runInPermitFrame(this.parts.instanceId, permit, () => fn(permit));
      } finally {
        await permit.release().catch((err: unknown) => {
          this.parts.logger.warn(`releasing a permit of "${key}" failed (its lease will free it): ${errorText(err)}`);
        });
      }
    })();
  }

  async setLimit(key: string, limit: number): Promise<number> {
    const ref = this.ref(key, { limit });
    this.throwIfClosed(key);
    return this.parts.bound(this.store().setLimit(ref), 'acquire', key);
  }

  async inspect(key: string): Promise<PermitInfo | null> {
    const ref = this.ref(key, { limit: 1 });
    this.throwIfClosed(key);
    return this.parts.bound(this.store().inspectPermits(ref), 'inspect', key);
  }

  async forceRelease(key: string, holder?: string | { readonly owner: string }): Promise<number> {
    const ref = this.ref(key, { limit: 1 });
    const which = typeof holder === 'string' ? { token: holder } : holder === undefined ? {} : { owner: holder?.owner };
    const given = typeof holder === 'string' ? holder : holder === undefined ? undefined : holder?.owner;
    if (holder !== undefined && (typeof given !== 'string' || given.length === 0)) {
      throw new LockConfigError(
        `invalid holder for "${key}": expected the non-empty token of a PermitHandle, or { owner } as inspectPermits shows it`,
        'token',
        key,
      );
    }
    this.throwIfClosed(key);
    const sentAt = performance.now();
    const freed = await this.parts.bound(this.store().forceReleasePermits(ref, which), 'forceRelease', key);
    // This process's holders learn it now (others at their next renewal), as for a lock's force release.
    this.parts.loseAll(key, sentAt, which);
    return freed;
  }

  private handle(hold: LockHandle, ref: PermitRef): PermitHandle {
    const stored = this.store().storedLimit(ref.key) ?? ref.limit;
    if (stored !== ref.limit && !this.warned.has(`${ref.key}|${ref.limit}`)) {
      if (this.warned.size >= 10_000) this.warned.clear(); // bounded, as the store's caches: at worst a warning again
      this.warned.add(`${ref.key}|${ref.limit}`);
      this.parts.logger.warn(
        `semaphore "${ref.key}": limit ${ref.limit} asked, ${stored} stored in Redis applies (another version of the ` +
          `service set it; call setPermitLimit to change it on purpose)`,
      );
    }
    return new PermitHandleImpl(hold, stored);
  }

  private ref(key: string, options: PermitOptions): PermitRef {
    validateLockKey(key);
    if (options === null || typeof options !== 'object') {
      throw new LockConfigError(
        `invalid options for semaphore "${key}": expected an object with a limit`,
        'options',
        key,
      );
    }
    const { limit } = options;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMIT_LIMIT) {
      throw new LockConfigError(
        `invalid limit for semaphore "${key}": ${String(limit)}; expected an integer from 1 to ${MAX_PERMIT_LIMIT} (the number of holders allowed at once)`,
        'limit',
        key,
      );
    }
    return this.store().permit(key, limit);
  }

  private store(): PermitStore {
    if (!this.parts.permits)
      throw new LockConfigError(this.parts.unsupported ?? 'this lock store has no semaphores', 'redis');
    return this.parts.permits;
  }

  private throwIfClosed(key: string): void {
    if (this.parts.closed()) throw new LockClosedError(key);
  }
}

/** The options a permit takes (a lock's `mode`, `ifLocked` and `holdAtLeastMs` do not apply). */
function permitOnly(options: PermitOptions): Omit<PermitOptions, 'limit'> {
  const { leaseMs, autoExtend, waitTimeoutMs, signal, fair } = options;
  return { leaseMs, autoExtend, waitTimeoutMs, signal, fair };
}
