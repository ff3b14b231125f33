import type {
  AcquireCall,
  AcquireReply,
  LockRef,
  LockStore,
  LockStoreContext,
  LockStoreFactory,
  ReleaseReply,
  RenewCall,
  StorePing,
  WaitingCall,
  WaitingReply,
  WakeUp,
  WakeUpSubscription,
} from '../store/lock-store.js';
import type { LockHolderInfo, LockInfo, LockMode } from '../types/lock.types.js';
import { LockError } from '../errors/lock.error.js';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import { kindConflict } from '../store/kind-conflict.js';
import type { PermitStore } from '../store/permit-store.js';
import * as scripts from './memory-lock-scripts.js';
import { MemoryPermitStore } from './memory-permit-store.js';
import { MemoryLockWorld } from './memory-lock-world.js';
import type { MemoryListener, MemoryLockState, ScriptScope } from './memory-lock-world.js';

/**
 * @internal A lock store in this process's memory: the semantics of the Redis store (read/write, writer preference,
 * reentrant hold counts with at-most-once commands, leases, fencing tokens, fair queues, wake-ups, `inspect`), with
 * no Redis. Each operation is the in-process transliteration of the matching Lua script, run on a
 * `MemoryLockWorld` that every store of the same world and key prefix shares, so several engines in one process
 * behave as several app instances on one Redis. Made for tests; the parity suite runs the same semantic tests on
 * this store and on Redis.
 *
 * Differences from the Redis store, on purpose:
 * - Time is this process's monotonic clock (`performance.now()`), not Redis server time; `since` in `inspect` is
 *   `Date.now()` at the acquisition. Leases and waiter registrations run out lazily, when an operation next looks
 *   at the lock (as Redis scripts purge), so a lock whose holder stopped renewing is freed by the next caller,
 *   never by a timer.
 * - Fencing tokens come from one counter per world: the monotonic clock in microseconds (so they look like Redis's
 *   `TIME`-based ones), bumped past the last token on ties. They increase per key as on Redis, and also across
 *   keys and across a key's full release without depending on the clock.
 * - Wake-ups reach the listeners registered when the operation ran, in a later microtask; a subscription is live
 *   at once and is dropped as soon as its last listener stops (no linger).
 * - Each operation applies when it is called, in call order, and answers in a microtask: there is no network in
 *   between, so races that need a slow round trip (a grant reaching a caller that already gave up, a command
 *   re-sent after a reconnect) do not happen, and nothing can fail: no timeouts, `ping` answers at once.
 *   Operations after `close()` reject with an `Error`, as commands on a closed connection do.
 * - A world lives in one process (and one JavaScript realm: under Jest each test file has its own default world);
 *   it cannot stand in for Redis between processes.
 * - Host and app names in holder records are kept as given (Redis replaces `|` with `_`).
 *
 * Applications get it through `RedisLockTestingModule`, or `createMemoryLockEngine` without Nest.
 *
 * @example
 * const world = new MemoryLockWorld();
 * const engine = createMemoryLockEngine({ world }); // a MemoryLockStore on `world` under the engine
 */
/* eslint-disable @typescript-eslint/require-await -- async on purpose: a store rejects, never throws synchronously */
export class MemoryLockStore implements LockStore {
  private readonly listening = new Map<string, Set<MemoryListener>>();
  private permitStore: PermitStore | undefined;
  private closed = false;

  constructor(
    private readonly world: MemoryLockWorld,
    private readonly context: LockStoreContext,
  ) {}

  lock(key: string): LockRef {
    return { key };
  }

  async acquire(call: AcquireCall): Promise<AcquireReply> {
    return this.run(call.lock, (s, x) => {
      if (s.limit !== undefined) throw kindConflict(call.lock.key, 'semaphore');
      return scripts.acquire(s, call, this.context.identity, x);
    });
  }

  /** The semaphores of this store's world and prefix (made once). */
  permits(): PermitStore {
    return (this.permitStore ??= new MemoryPermitStore(this, this.context.identity, (ref, script) =>
      this.run(ref, script),
    ));
  }

  async release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs = 0): Promise<ReleaseReply> {
    return this.run(lock, (s, x) => scripts.release(s, token, seq, x, holdAtLeastMs));
  }

  async renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    return holds.map(({ lock, token, leaseMs }) => this.run(lock, (s, x) => scripts.renew(s, token, leaseMs, x)));
  }

  async extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return this.run(lock, (s, x) => scripts.extend(s, token, ms, x));
  }

  async cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    this.run(lock, (s, x) => scripts.cancelWait(s, mode, waiterId, x));
  }

  async keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    const woken = new Map<MemoryLockState, string[]>();
    return waits.map((wait) => this.run(wait.lock, (s, x) => scripts.keepWaiting(s, wait, x, woken)));
  }

  async forceRelease(lock: LockRef): Promise<boolean> {
    return this.run(lock, (s, x) => {
      if (s.limit !== undefined) throw kindConflict(lock.key, 'semaphore');
      return scripts.forceRelease(s, x);
    });
  }

  async inspect(lock: LockRef): Promise<LockInfo | null> {
    return this.run(lock, (s, x) => {
      if (s.limit !== undefined) throw kindConflict(lock.key, 'semaphore');
      return snapshot(lock.key, s, x.now);
    });
  }

  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    const listener: MemoryListener = { onWakeUp, onError: this.context.onConnectionError, stopped: this.closed };
    if (this.closed) return { live: true, ready: Promise.resolve(), stop: () => undefined };
    const unlisten = this.world.listen(this.context.keyPrefix, lock.key, listener);
    let mine = this.listening.get(lock.key);
    if (!mine) this.listening.set(lock.key, (mine = new Set()));
    mine.add(listener);
    const registered = mine;
    return {
      live: true,
      ready: Promise.resolve(),
      stop: () => {
        unlisten();
        registered.delete(listener);
        if (registered.size === 0 && this.listening.get(lock.key) === registered) this.listening.delete(lock.key);
      },
    };
  }

  isListening(lock: LockRef): boolean {
    return this.listening.has(lock.key);
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    if (failure instanceof LockError) return failure;
    const detail = failure instanceof Error ? failure.message : `no answer within ${timeoutMs} ms`;
    return new LockUnavailableError({
      key,
      operation,
      reason: 'unreachable',
      detail: `memory store: ${detail}`,
      cause: failure,
    });
  }

  async ping(): Promise<StorePing> {
    if (this.closed)
      return { command: false, subscriber: false, commandMs: 0, subscriberMs: 0, error: closedMessage() };
    return { command: true, subscriber: true, commandMs: 0, subscriberMs: 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const listeners of this.listening.values()) {
      for (const listener of listeners) listener.stopped = true;
    }
    this.listening.clear();
  }

  private run<T>(lock: LockRef, script: (state: MemoryLockState, scope: ScriptScope) => T): T {
    if (this.closed) throw new Error(closedMessage());
    return this.world.run(this.context.keyPrefix, lock.key, script);
  }
}
/* eslint-enable @typescript-eslint/require-await */

/** The INSPECT script: live holders in lease order, waiters fair and non-fair alike. */
function snapshot(key: string, s: MemoryLockState, now: number): LockInfo | null {
  const holders: LockHolderInfo[] = [];
  const leases = [...s.leases]
    .filter(([, expiry]) => expiry > now)
    .sort(([ta, a], [tb, b]) => a - b || (ta < tb ? -1 : 1));
  for (const [token, expiry] of leases) {
    const h = s.holders.get(token);
    if (!h) continue;
    const { host, pid, app } = h.identity;
    holders.push({
      mode: token === s.writer ? 'write' : 'read',
      owner: h.owner,
      host,
      pid,
      app,
      holdCount: h.count,
      finished: h.count === 0,
      since: new Date(h.since),
      remainingLeaseMs: Math.ceil(expiry - now),
      fencingToken: h.fence,
    });
  }
  if (holders.length === 0) return null;
  const queued = [...s.queue].filter(([, expiry]) => expiry > now).map(([member]) => member);
  const fairWriters = queued.filter((m) => m.startsWith('w')).length;
  const live = (zset: Map<string, number>) => [...zset.values()].filter((expiry) => expiry > now).length;
  const waitingWriters = live(s.writers) + fairWriters;
  const waitingReaders = live(s.readers) + queued.length - fairWriters;
  return {
    key,
    mode: holders.some((h) => h.mode === 'write') ? 'write' : 'read',
    holders,
    waiting: waitingWriters + waitingReaders,
    waitingWriters,
    waitingReaders,
    fencingToken: s.fence,
  };
}

function closedMessage(): string {
  return 'the memory lock store is closed';
}

/**
 * @internal A `LockStoreFactory` of memory stores on `world` (default: `MemoryLockWorld.default`, shared by the
 * process).
 * Engines made with it on the same world and key prefix share their locks.
 *
 * @example
 * const world = new MemoryLockWorld();
 * const engine = createMemoryLockEngine({ world, keyPrefix: 'orders:' }); // uses this factory
 */
export function memoryLockStore(world: MemoryLockWorld = MemoryLockWorld.default): LockStoreFactory {
  return (context) => new MemoryLockStore(world, context);
}
