import { performance } from 'node:perf_hooks';
import { DEFAULT_LOCK_SETTINGS } from '../locking/settings/engine-settings.js';
import type { HolderIdentity, WakeUp } from '../store/lock-store.js';

/** @internal One holder of a lock (the Lua scripts' `h:<token>` field `count|seq|fence|since|info`). */
export interface MemoryHolder {
  /** Reentrant hold count. */
  count: number;
  /** Last operation number applied for this token. */
  seq: number;
  readonly fence: number;
  /** Wall-clock time of the first acquisition, in ms since the epoch. */
  readonly since: number;
  /** The same on the world's monotonic clock (what `holdAtLeastMs` counts from). */
  readonly at: number;
  readonly identity: HolderIdentity;
  readonly owner: string;
}

/**
 * @internal The state of one lock, as the Lua scripts keep it in six Redis keys (see
 * `lib/redis/scripts/lock-prelude.ts`). Times
 * are
 * on the world's monotonic clock, in milliseconds.
 */
export interface MemoryLockState {
  /** State hash `w`: the writer's token. */
  writer: string | undefined;
  /** State hash `f`: the last fencing token handed out while the lock was held. */
  fence: number;
  /** State hash `h:<token>`. */
  readonly holders: Map<string, MemoryHolder>;
  /** Leases zset: holder token -> lease expiry. */
  readonly leases: Map<string, number>;
  /** Waiting (non-fair) writers: waiter id -> registration expiry. */
  readonly writers: Map<string, number>;
  /** Waiting (non-fair) readers: waiter id -> registration expiry. */
  readonly readers: Map<string, number>;
  /** Fair queue, in arrival order (Map insertion order): `<w|r>:<waiter id>` -> registration expiry. */
  readonly queue: Map<string, number>;
  /** A semaphore's stored limit (state hash `n`); `undefined` for a lock. */
  limit: number | undefined;
  /** Until when SET_LIMIT keeps a semaphore's state (state hash `k`), on the world's clock. */
  keptUntil: number;
}

/**
 * @internal What a script may use while it runs: the clock frozen at its start, fencing tokens, and wake-ups to
 * publish.
 */
export interface ScriptScope {
  /** Monotonic time, in milliseconds (the scripts' `now`). */
  readonly now: number;
  /** A fencing token greater than every one this world handed out before. */
  nextFence(): number;
  /** Queues a wake-up, delivered to the lock's listeners after the script returned. */
  publish(wakeUp: WakeUp): void;
}

/** @internal A wake-up listener of one store on one lock. */
export interface MemoryListener {
  readonly onWakeUp: (wakeUp: WakeUp) => void;
  readonly onError: (err: unknown) => void;
  stopped: boolean;
}

/** The locks and listeners of one key prefix. */
interface Space {
  readonly locks: Map<string, MemoryLockState>;
  readonly listeners: Map<string, Set<MemoryListener>>;
}

const DEFAULT_WORLD = Symbol.for('nest-redis-locks.memory-lock-world');
type GlobalWithWorld = typeof globalThis & { [DEFAULT_WORLD]?: MemoryLockWorld };

/**
 * The shared state behind memory lock stores: what one Redis server is to the Redis stores. Every engine (or
 * `LockService`) made on the same world and key prefix sees the same locks, as several instances of an app on one
 * Redis do; another world, or another prefix, is another set of locks.
 *
 * @example
 * const world = new MemoryLockWorld();
 * const instanceA = createMemoryLockEngine({ world });
 * const instanceB = createMemoryLockEngine({ world });
 * const lock = await instanceA.acquire('invoice:42');
 * expect(await instanceB.tryAcquire('invoice:42')).toBeNull();
 */
export class MemoryLockWorld {
  private readonly spaces = new Map<string, Space>();
  private lastFence = 0;

  /** The process-wide world used when none is given (kept on `globalThis`, so every copy of the library shares it). */
  static get default(): MemoryLockWorld {
    const g = globalThis as GlobalWithWorld;
    return (g[DEFAULT_WORLD] ??= new MemoryLockWorld());
  }

  /**
   * The lock keys under `keyPrefix` that still have state: a holder with a running lease, or a waiter whose
   * registration has not run out. Sorted. After every engine is closed it should be empty, as Redis would be.
   * @param keyPrefix the engines' `keyPrefix`; default `'lock:'`.
   */
  keys(keyPrefix: string = DEFAULT_LOCK_SETTINGS.keyPrefix): string[] {
    const space = this.spaces.get(keyPrefix);
    if (!space) return [];
    const now = performance.now();
    const live: string[] = [];
    for (const [key, state] of [...space.locks]) {
      expire(state, now);
      if (isEmpty(state, now)) space.locks.delete(key);
      else live.push(key);
    }
    return live.sort();
  }

  /**
   * Forgets every lock of every prefix at once, waking nobody: a clean slate between tests. Engines still holding
   * a lock find it gone at their next renewal (its signal aborts with `LockLostError`); close them first instead.
   */
  clear(): void {
    for (const space of this.spaces.values()) space.locks.clear();
  }

  /**
   * @internal Runs `script` atomically on the lock `key` under `prefix`, with the clock read once, then delivers
   * the wake-ups it published asynchronously, to the listeners registered when it ran.
   */
  run<T>(prefix: string, key: string, script: (state: MemoryLockState, scope: ScriptScope) => T): T {
    const space = this.space(prefix);
    const now = performance.now();
    let state = space.locks.get(key);
    if (state) expire(state, now);
    else state = emptyState();
    const published: WakeUp[] = [];
    const result = script(state, { now, nextFence: () => this.nextFence(), publish: (w) => published.push(w) });
    if (isEmpty(state, now)) space.locks.delete(key);
    else space.locks.set(key, state);
    if (published.length > 0) this.deliver(space.listeners.get(key), published);
    return result;
  }

  /** @internal Adds a wake-up listener of `key` under `prefix`; returns the function that removes it. */
  listen(prefix: string, key: string, listener: MemoryListener): () => void {
    const { listeners } = this.space(prefix);
    let set = listeners.get(key);
    if (!set) listeners.set(key, (set = new Set()));
    set.add(listener);
    const registered = set;
    return () => {
      listener.stopped = true;
      registered.delete(listener);
      if (registered.size === 0 && listeners.get(key) === registered) listeners.delete(key);
    };
  }

  /** Never re-entrant: listeners run in a later microtask, as a message arrives on a subscriber connection. */
  private deliver(registered: Set<MemoryListener> | undefined, wakeUps: readonly WakeUp[]): void {
    if (!registered || registered.size === 0) return;
    const listeners = [...registered];
    queueMicrotask(() => {
      for (const wakeUp of wakeUps) {
        for (const listener of listeners) {
          if (listener.stopped) continue;
          try {
            listener.onWakeUp(wakeUp);
          } catch (err) {
            listener.onError(err);
          }
        }
      }
    });
  }

  /** Strictly increasing across the world: the clock in µs (as the scripts' `nowus`), bumped past the last one. */
  private nextFence(): number {
    const us = Math.floor((performance.timeOrigin + performance.now()) * 1000);
    this.lastFence = Math.max(this.lastFence + 1, us);
    return this.lastFence;
  }

  private space(prefix: string): Space {
    let space = this.spaces.get(prefix);
    if (!space) this.spaces.set(prefix, (space = { locks: new Map(), listeners: new Map() }));
    return space;
  }
}

function emptyState(): MemoryLockState {
  return {
    writer: undefined,
    fence: 0,
    holders: new Map(),
    leases: new Map(),
    writers: new Map(),
    readers: new Map(),
    queue: new Map(),
    limit: undefined,
    keptUntil: 0,
  };
}

function isEmpty(state: MemoryLockState, now: number): boolean {
  if (state.keptUntil > now) return false;
  return state.leases.size === 0 && state.writers.size === 0 && state.readers.size === 0 && state.queue.size === 0;
}

/**
 * What Redis key expiry does before a script runs: the state and leases vanish once every lease ran out (a lease
 * that ran out while others live stays until a script purges it, as in Redis). Waiter registrations that ran out
 * are dropped one by one; every script ignores them anyway, so this changes no outcome.
 */
function expire(state: MemoryLockState, now: number): void {
  let top = Number.NEGATIVE_INFINITY;
  for (const expiry of state.leases.values()) if (expiry > top) top = expiry;
  if (state.leases.size > 0 && top <= now) {
    state.leases.clear();
    state.holders.clear();
    state.writer = undefined;
    state.fence = 0;
  }
  for (const waiting of [state.writers, state.readers, state.queue]) {
    for (const [id, expiry] of waiting) if (expiry <= now) waiting.delete(id);
  }
}
