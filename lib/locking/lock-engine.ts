import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockClosedError } from '../errors/lock-closed.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import type { LockLostReason } from '../errors/lock-lost.error.js';
import { LockUpgradeError } from '../errors/lock-upgrade.error.js';
import { openConnections } from '../redis/connection.js';
import type { LockConnections, RedisConnectionInput } from '../redis/connection.js';
import { lockKeys, validateLockKey } from '../redis/key-layout.js';
import type { LockKeys } from '../redis/key-layout.js';
import { LockSubscriber } from '../redis/lock-subscriber.js';
import { ACQUIRE, CANCEL_WAIT, EXTEND, FORCE_RELEASE, RELEASE, RENEW_MANY } from '../redis/lua-scripts.js';
import { runScript } from '../redis/script-runner.js';
import type { RedisClient } from '../redis/script-runner.js';
import { Hold } from './hold.js';
import { inspectLock } from './inspect.js';
import type { LockEventListener, LockEventName, LockEvents, LockLogger } from './lock-events.js';
import { LockHandleImpl } from './lock-handle.js';
import { resolveAcquireOptions, resolveEngineSettings } from './lock-options.js';
import type { LockEngineSettings, ResolvedAcquireOptions } from './lock-options.js';
import type { AcquireOptions, LockHandle, LockInfo, LockMode } from './lock.types.js';
import { LockOwner, newInstanceId, ownerStorage } from './owner-context.js';
import type { DeferredReleaseSlot, LockFrame } from './owner-context.js';
import { WaitSignal } from './wait-signal.js';
import { Watchdog } from './watchdog.js';
import { LockAlarm, describeHeldTooLong } from './lock-alarm.js';
import type { WaitRecord } from './lock-alarm.js';

/** Options of a `LockEngine`: the connection plus the engine settings (all optional but `redis`). */
export interface LockEngineOptions extends Partial<LockEngineSettings> {
  /** A redis:// URL, ioredis `RedisOptions`, or an ioredis `Redis` / `Cluster` the application owns. */
  readonly redis: RedisConnectionInput;
  /** Where the engine writes warnings. Default: `console` for warnings and errors only. */
  readonly logger?: LockLogger;
}

/** Holds renewed per script call: 2 keys each, so one call stays well under Redis's argument limits. */
const RENEW_CHUNK = 200;
/** Lock names kept ready-made; the cache starts over when full. */
const NAMES_CACHE_SIZE = 10_000;
/** How long an idle wake-up subscription is kept, in milliseconds. */
const SUBSCRIPTION_LINGER_MS = 1_000;

const consoleLogger: LockLogger = {
  warn: (m) => console.warn(`[nest-redis-locks] ${m}`),
  error: (m) => console.error(`[nest-redis-locks] ${m}`),
};

/**
 * The framework-free lock engine: read/write locks with reentrancy, leases, a batched watchdog, pub/sub
 * wake-ups and fencing tokens. The Nest layer (`LockService`) is a thin wrapper over it.
 */
export class LockEngine {
  readonly settings: LockEngineSettings;
  /** Random id of this engine instance, part of every owner id. */
  readonly instanceId = newInstanceId();
  private readonly connections: LockConnections;
  private readonly client: RedisClient;
  private readonly subscriber: LockSubscriber;
  private readonly watchdog: Watchdog;
  private readonly events = new EventEmitter();
  private readonly logger: LockLogger;
  private readonly holderInfo: string;
  private readonly sleepers = new Set<WaitSignal>();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly waits = new Set<WaitRecord>();
  private readonly names = new Map<string, LockKeys>();
  private readonly alarm: LockAlarm;
  private waiterSeq = 0;
  private closed = false;
  /** Set by `beginShutdown`: new holds are refused and waiters rejected; re-entry by current holders goes on. */
  private closing = false;

  constructor(options: LockEngineOptions) {
    this.settings = resolveEngineSettings({
      keyPrefix: options.keyPrefix,
      leaseMs: options.leaseMs,
      waitTimeoutMs: options.waitTimeoutMs,
      autoExtend: options.autoExtend,
      appName: options.appName,
      holdWarningMs: options.holdWarningMs,
      waitWarningMs: options.waitWarningMs,
    });
    this.logger = options.logger ?? consoleLogger;
    this.connections = openConnections(options.redis);
    this.client = this.connections.client;
    const logError = (err: unknown) => this.logger.warn(`Redis error: ${errorText(err)}`);
    this.connections.subscriber.on('error', logError);
    if (this.client !== (options.redis as unknown)) this.client.on('error', logError);
    this.subscriber = new LockSubscriber(this.connections.subscriber, SUBSCRIPTION_LINGER_MS, logError);
    this.watchdog = new Watchdog(
      (holds) => this.renewBatch(holds),
      (hold, reason, cause) => this.markLost(hold, reason, cause),
      (err, holds) => this.logger.warn(`lease renewal of ${holds.length} lock(s) failed, retrying: ${errorText(err)}`),
    );
    this.events.setMaxListeners(0);
    const clean = (s: string) => s.replace(/\|/g, '_');
    this.holderInfo = `${clean(hostname())}|${process.pid}|${clean(this.settings.appName)}`;
    this.alarm = new LockAlarm(
      this.settings.holdWarningMs,
      this.settings.waitWarningMs,
      { host: hostname(), pid: process.pid, app: this.settings.appName },
      () => this.watchdog.list(),
      () => this.waits,
      (key) => this.inspect(key),
      (event) => {
        this.logger.warn(describeHeldTooLong(event));
        this.emit('held-too-long', event);
      },
    );
    this.alarm.start();
  }

  /** The command connection (shared with the application when it passed its own client). */
  get redis(): RedisClient {
    return this.client;
  }

  /** Number of holds this process currently keeps (and renews). */
  get heldCount(): number {
    return this.watchdog.size;
  }

  // ---------------------------------------------------------------- events

  on<E extends LockEventName>(event: E, listener: LockEventListener<E>): () => void {
    this.events.on(event, listener);
    return () => this.events.off(event, listener);
  }

  off<E extends LockEventName>(event: E, listener: LockEventListener<E>): void {
    this.events.off(event, listener);
  }

  private emit<E extends LockEventName>(event: E, payload: LockEvents[E]): void {
    if (this.events.listenerCount(event) === 0) return;
    try {
      this.events.emit(event, payload);
    } catch (err) {
      this.logger.error(`a "${event}" listener threw: ${errorText(err)}`);
    }
  }

  // ---------------------------------------------------------------- owner context

  /** The innermost handle of the current async context (set by `withLock` and the decorators). */
  current(): LockHandle | undefined {
    return ownerStorage().getStore()?.handle as LockHandle | undefined;
  }

  /** Runs `fn` as the current owner, starting a new owner context when there is none. */
  runInOwnerScope<T>(fn: () => T): T {
    const frame = ownerStorage().getStore();
    if (frame) return fn();
    return ownerStorage().run({ owner: new LockOwner(this.instanceId), handle: undefined }, fn);
  }

  /** Runs `fn` in the current owner context with `handle` as the current handle. */
  runWithHandle<T>(handle: LockHandle, fn: () => T): T {
    const frame = ownerStorage().getStore();
    const owner = frame?.owner ?? (handle as LockHandleImpl).owner;
    return ownerStorage().run({ owner, handle } satisfies LockFrame, fn);
  }

  /**
   * Runs `fn` in the current owner context (a new one if there is none) with a deferred-release slot for
   * `target`: used by the Nest interceptor so a decorated handler's lock lasts until its response completes.
   */
  runWithSlot<T>(slot: DeferredReleaseSlot, fn: () => T): T {
    const frame = ownerStorage().getStore();
    const owner = frame?.owner ?? new LockOwner(this.instanceId);
    return ownerStorage().run({ owner, handle: frame?.handle, slot }, fn);
  }

  /** Takes the current context's deferred-release slot for `target`, once. */
  takeSlot(target: unknown): DeferredReleaseSlot | undefined {
    const slot = ownerStorage().getStore()?.slot;
    if (!slot || slot.used || slot.target !== target) return undefined;
    slot.used = true;
    return slot;
  }

  /**
   * Where an owner keeps this engine's hold on `key`. Owner contexts are shared by every engine in the process,
   * so holds are kept per engine: another engine's lock on the same key name is another lock.
   */
  private slot(key: string): string {
    return `${this.instanceId}|${key}`;
  }

  /** Redis names of `key`, cached (a busy process locks the same keys again and again). */
  private namesOf(key: string): LockKeys {
    let names = this.names.get(key);
    if (!names) {
      if (this.names.size >= NAMES_CACHE_SIZE) this.names.clear();
      names = lockKeys(this.settings.keyPrefix, key);
      this.names.set(key, names);
    }
    return names;
  }

  private currentOwner(): LockOwner {
    return ownerStorage().getStore()?.owner ?? new LockOwner(this.instanceId);
  }

  // ---------------------------------------------------------------- acquisition

  /** Waits up to `waitTimeoutMs` for the lock; rejects with `LockAcquireTimeoutError`. */
  acquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle> {
    return this.acquireWith(this.currentOwner(), keys, options, true) as Promise<LockHandle>;
  }

  /** One attempt without waiting: the handle, or `null` if the lock is taken. */
  tryAcquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle | null> {
    return this.acquireWith(this.currentOwner(), keys, options, false);
  }

  /**
   * Acquires, runs `fn(handle)` with the handle as the current lock, releases on success and on throw, and
   * returns what `fn` returns. Nested calls in the same async context re-enter.
   */
  withLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.runInOwnerScope(async () => {
      const handle = await this.acquire(keys, options);
      try {
        return await this.runWithHandle(handle, () => fn(handle));
      } finally {
        await handle.release().catch((err: unknown) => {
          this.logger.warn(`releasing "${handle.key}" failed (its lease will free it): ${errorText(err)}`);
        });
      }
    });
  }

  private acquireWith(
    owner: LockOwner,
    input: string | readonly string[],
    options: AcquireOptions | undefined,
    waiting: boolean,
  ): Promise<LockHandle | null> {
    const run = this.acquireAll(owner, input, options, waiting);
    this.inflight.add(run);
    const forget = () => this.inflight.delete(run);
    run.then(forget, forget);
    return run;
  }

  private async acquireAll(
    owner: LockOwner,
    input: string | readonly string[],
    options: AcquireOptions | undefined,
    waiting: boolean,
  ): Promise<LockHandle | null> {
    const keys = normalizeKeys(input);
    const resolved = resolveAcquireOptions(this.settings, options, keys[0]);
    resolved.signal?.throwIfAborted();
    const start = performance.now();
    const request: AcquireRequest = {
      owner,
      o: resolved,
      start,
      deadline: waiting ? start + resolved.waitTimeoutMs : start,
      allKeys: keys,
      waiting,
    };
    const holds: Hold[] = [];
    let reentrant = true;
    try {
      // All or nothing, in sorted order: two callers locking [a, b] and [b, a] cannot deadlock.
      for (const key of keys) {
        const got = await this.acquireKey(request, this.namesOf(key));
        if (!got) {
          await this.releaseAll(holds);
          return null;
        }
        holds.push(got.hold);
        reentrant &&= got.reentrant;
      }
    } catch (err) {
      await this.releaseAll(holds);
      throw err;
    }
    return new LockHandleImpl(this, owner, holds, resolved.mode, reentrant);
  }

  private async releaseAll(holds: readonly Hold[]): Promise<void> {
    for (const hold of [...holds].reverse()) {
      await this.releaseHold(hold).catch((err: unknown) =>
        this.logger.warn(`releasing "${hold.key}" after a failed acquisition failed: ${errorText(err)}`),
      );
    }
  }

  private acquireKey(request: AcquireRequest, keys: LockKeys): Promise<{ hold: Hold; reentrant: boolean } | null> {
    const { owner, o } = request;
    // Parallel branches of one owner context: the first acquisition (or a release in flight) finishes, then the
    // next one re-enters or starts afresh.
    return owner.oneAtATime(`${o.mode}:${this.slot(keys.key)}`, async () => {
      const existing = owner.hold(this.slot(keys.key), o.mode);
      if (existing) return { hold: await this.reenter(existing, o, request.start), reentrant: true };
      if (o.mode === 'write' && owner.hold(this.slot(keys.key), 'read')) throw new LockUpgradeError(keys.key);
      const hold = await this.acquireFresh(request, keys);
      return hold ? { hold, reentrant: false } : null;
    });
  }

  private async reenter(hold: Hold, o: ResolvedAcquireOptions, start: number): Promise<Hold> {
    if (hold.lost) throw hold.lost;
    hold.count++;
    try {
      const reply = await this.runAcquire(hold.keys, hold.mode, hold.token, o.leaseMs, '', '', true, hold.owner, false);
      if (reply[0] !== 1) {
        hold.count--;
        this.markLost(hold, 'not-in-redis');
        throw hold.lost;
      }
    } catch (err) {
      if (!(err instanceof LockLostError)) hold.count--;
      throw err;
    }
    if (o.leaseMs > hold.leaseMs) hold.leaseMs = o.leaseMs;
    this.emit('acquired', {
      key: hold.key,
      mode: hold.mode,
      owner: hold.owner.id,
      waitedMs: performance.now() - start,
      fencingToken: hold.fencingToken,
      reentrant: true,
    });
    return hold;
  }

  private runAcquire(
    keys: LockKeys,
    mode: LockMode,
    token: string,
    leaseMs: number,
    downgradeToken: string,
    waiterId: string,
    reentry: boolean,
    owner: LockOwner,
    fair: boolean,
  ): Promise<[number, number, number]> {
    // Holder info as `inspect` decodes it: host|pid|app|owner.
    const info = `${this.holderInfo}|${owner.id}`;
    return runScript(
      this.client,
      ACQUIRE,
      keys.all,
      [token, mode === 'write' ? 'w' : 'r', leaseMs, owner.nextSeq(), downgradeToken, waiterId, info, keys.channel, reentry ? '1' : '0', fair ? '1' : '0'],
    ) as Promise<[number, number, number]>;
  }

  private async acquireFresh(request: AcquireRequest, keys: LockKeys): Promise<Hold | null> {
    const { owner, o, start, deadline, allKeys, waiting } = request;
    const { mode } = o;
    const token = owner.token(mode);
    const downgradeToken = mode === 'read' ? (owner.hold(this.slot(keys.key), 'write')?.token ?? '') : '';
    const waiterId = waiting ? `${this.instanceId}.${++this.waiterSeq}` : '';
    // The waiting machinery is set up only when needed: an uncontended acquisition never builds it.
    let wakeUp: WaitSignal | undefined;
    const listen = () => {
      const signal = (wakeUp = new WaitSignal());
      this.sleepers.add(signal);
      return this.subscriber.listen(keys.channel, (msg) => {
        if (msg === `f:${waiterId}` || msg === `w:${waiterId}` || (msg === 'r' && mode === 'read')) signal.fire();
      });
    };
    let waitRecord: WaitRecord | undefined;
    // When this process already listens on the lock's channel, join before the first attempt: no wake-up is missed.
    let listener = waiting && this.subscriber.isLive(keys.channel) ? listen() : undefined;
    let registered = false;
    let contended = false;
    let granted = false;
    try {
      for (;;) {
        if (this.closing) throw new LockClosedError(keys.key);
        wakeUp?.reset();
        const sentAt = performance.now();
        const [ok, value] = await this.runAcquire(keys, mode, token, o.leaseMs, downgradeToken, waiterId, false, owner, o.fair);
        if (ok === 1) {
          granted = true;
          const hold = new Hold(owner, keys, mode, token, value, o.leaseMs, o.autoExtend, sentAt);
          owner.setHold(this.slot(keys.key), mode, hold);
          this.watchdog.add(hold);
          this.emit('acquired', { key: keys.key, mode, owner: owner.id, waitedMs: performance.now() - start, fencingToken: value, reentrant: false });
          return hold;
        }
        if (waiterId) registered = true;
        if (!contended) {
          contended = true;
          this.emit('contended', { key: keys.key, mode, owner: owner.id });
          if (waiting) {
            waitRecord = { key: keys.key, mode, owner: owner.id, startedAt: start, alarmed: false };
            this.waits.add(waitRecord);
          }
        }
        if (!waiting) return null;
        const remaining = deadline - performance.now();
        if (remaining <= 0) {
          const waitedMs = performance.now() - start;
          this.emit('timeout', { key: keys.key, mode, owner: owner.id, waitedMs });
          throw new LockAcquireTimeoutError({ key: keys.key, keys: allKeys, mode, waitedMs, waitTimeoutMs: o.waitTimeoutMs });
        }
        if (!listener) {
          // Subscribe, then try again at once: a release between the attempt above and the subscription is not lost.
          listener = listen();
          if (!listener.live) await listener.ready;
          continue;
        }
        // Sleep until woken, until the blocking leases can have run out, or until the deadline.
        if (!wakeUp!.fired) await wakeUp!.wait(Math.min(value + 1, remaining), o.signal);
        o.signal?.throwIfAborted();
      }
    } finally {
      if (waitRecord) this.waits.delete(waitRecord);
      if (wakeUp) this.sleepers.delete(wakeUp);
      listener?.stop();
      if (registered && !granted) await this.cancelWait(keys, mode, waiterId);
    }
  }

  private async cancelWait(keys: LockKeys, mode: LockMode, waiterId: string): Promise<void> {
    try {
      await runScript(
        this.client,
        CANCEL_WAIT,
        keys.all,
        [waiterId, mode === 'write' ? 'w' : 'r', keys.channel],
      );
    } catch (err) {
      // The registration expires by itself within one lease.
      this.logger.warn(`could not withdraw a waiter from "${keys.key}": ${errorText(err)}`);
    }
  }

  // ---------------------------------------------------------------- release, renewal, loss

  /** Releases one level of `hold`. `true` when Redis released it; `false` if it was no longer held. */
  async releaseHold(hold: Hold): Promise<boolean> {
    if (hold.ended) return false;
    hold.count--;
    const last = hold.count <= 0;
    if (last) this.endHold(hold);
    if (hold.lost) return false;
    const { owner } = hold;
    const reply = (await owner.oneAtATime(`${hold.mode}:${this.slot(hold.key)}`, () =>
      runScript(this.client, RELEASE, hold.keys.all, [hold.token, owner.nextSeq(), hold.keys.channel]),
    )) as number;
    if (reply === 0) {
      this.markLost(hold, 'not-in-redis');
      return false;
    }
    if (last) this.emit('released', { key: hold.key, mode: hold.mode, owner: hold.owner.id, heldMs: performance.now() - hold.acquiredAt });
    return true;
  }

  private endHold(hold: Hold): void {
    hold.ended = true;
    if (hold.owner.hold(this.slot(hold.key), hold.mode) === hold) hold.owner.setHold(this.slot(hold.key), hold.mode, undefined);
    this.watchdog.remove(hold);
  }

  /** Makes `hold`'s lease run `ms` from now. Returns false if Redis no longer has the hold. */
  async extendHold(hold: Hold, ms: number): Promise<boolean> {
    const sentAt = performance.now();
    const ok = (await runScript(this.client, EXTEND, hold.keys.all, [hold.token, ms])) === 1;
    if (!ok) {
      this.markLost(hold, 'not-in-redis');
      return false;
    }
    hold.validUntil = sentAt + ms;
    if (hold.autoExtend) hold.nextRenewAt = Math.min(hold.nextRenewAt, sentAt + ms / 3);
    return true;
  }

  private markLost(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (hold.lost) return;
    const error = new LockLostError(hold.key, reason, cause);
    hold.markLost(error);
    if (hold.owner.hold(this.slot(hold.key), hold.mode) === hold) hold.owner.setHold(this.slot(hold.key), hold.mode, undefined);
    this.watchdog.remove(hold);
    this.logger.warn(error.message);
    this.emit('lost', { key: hold.key, mode: hold.mode, owner: hold.owner.id, heldMs: performance.now() - hold.acquiredAt, error });
  }

  private async renewBatch(holds: readonly Hold[]): Promise<boolean[]> {
    const chunk = this.client.isCluster ? 1 : RENEW_CHUNK;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < holds.length; i += chunk) {
      const part = holds.slice(i, i + chunk);
      const keys: string[] = [];
      const args: (string | number)[] = [];
      for (const h of part) {
        keys.push(h.keys.state, h.keys.leases);
        args.push(h.token, h.leaseMs);
      }
      calls.push(runScript(this.client, RENEW_MANY, keys, args));
    }
    const replies = (await Promise.all(calls)) as number[][];
    return replies.flat().map((r) => r === 1);
  }

  // ---------------------------------------------------------------- administration

  /**
   * Releases the hold that `token` has on `key`, from any process: every reentrant level at once.
   * Resolves `false` when that token holds nothing there.
   */
  async release(key: string, token: string): Promise<boolean> {
    const keys = lockKeys(this.settings.keyPrefix, validateLockKey(key));
    if (typeof token !== 'string' || token.length === 0) {
      throw new LockKeyError(`invalid token for "${key}": expected the non-empty token of a LockHandle`, token, key);
    }
    for (const hold of this.watchdog.list()) if (hold.key === key && hold.token === token) this.endHold(hold);
    const reply = await runScript(this.client, RELEASE, keys.all, [token, '', keys.channel]);
    return reply === 2;
  }

  /** Frees `key` whoever holds it; holders find out at their next renewal. Resolves `true` if it was held. */
  async forceRelease(key: string): Promise<boolean> {
    const keys = lockKeys(this.settings.keyPrefix, validateLockKey(key));
    const reply = await runScript(this.client, FORCE_RELEASE, keys.all, [keys.channel]);
    for (const hold of this.watchdog.list()) if (hold.key === key) this.markLost(hold, 'not-in-redis');
    return reply === 1;
  }

  /** Who holds `key` and who waits, from Redis; `null` when nobody holds it. An invalid key rejects (never throws). */
  async inspect(key: string): Promise<LockInfo | null> {
    return inspectLock(this.client, lockKeys(this.settings.keyPrefix, validateLockKey(key)));
  }

  /**
   * Round trip to Redis on the command and the subscriber connections, each bounded by `timeoutMs`: what a
   * health check needs. Never throws.
   */
  async ping(timeoutMs = 1_000): Promise<{ command: boolean; subscriber: boolean; commandMs: number; subscriberMs: number; error?: string }> {
    let error: string | undefined;
    const timed = async (c: RedisClient): Promise<[boolean, number]> => {
      const start = performance.now();
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          c.ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no PING answer within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        return [true, performance.now() - start];
      } catch (err) {
        error ??= errorText(err);
        return [false, performance.now() - start];
      } finally {
        clearTimeout(timer);
      }
    };
    const [[command, commandMs], [subscriber, subscriberMs]] = await Promise.all([timed(this.client), timed(this.connections.subscriber)]);
    return { command, subscriber, commandMs, subscriberMs, ...(error ? { error } : {}) };
  }

  /**
   * First step of a graceful shutdown: waiting and new acquisitions reject with `LockClosedError`, while the
   * current holders finish their work (re-entering their own locks still works). `close()` does the rest.
   */
  beginShutdown(): void {
    if (this.closing) return;
    this.closing = true;
    this.alarm.stop();
    for (const s of this.sleepers) s.fire();
  }

  /**
   * Stops the engine: pending acquisitions reject with `LockClosedError`, the watchdog stops, every hold of
   * this process is released in Redis, and the connections the engine opened are closed.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.beginShutdown();
    await Promise.allSettled([...this.inflight]);
    const holds = this.watchdog.list();
    this.watchdog.stop();
    await Promise.all(
      holds.map(async (hold) => {
        hold.ended = true;
        try {
          await runScript(this.client, RELEASE, hold.keys.all, [hold.token, '', hold.keys.channel]);
        } catch (err) {
          this.logger.warn(`could not release "${hold.key}" on shutdown (its lease will free it): ${errorText(err)}`);
        }
      }),
    );
    this.subscriber.close();
    await this.connections.close();
  }
}

/** One call of `acquire` / `tryAcquire`, shared by the acquisition of each of its keys. */
interface AcquireRequest {
  readonly owner: LockOwner;
  readonly o: ResolvedAcquireOptions;
  /** performance.now() when the call started. */
  readonly start: number;
  /** performance.now() after which waiting gives up. */
  readonly deadline: number;
  readonly allKeys: readonly string[];
  /** `false` for `tryAcquire`: one attempt, no registration as a waiter. */
  readonly waiting: boolean;
}

function normalizeKeys(input: string | readonly string[]): string[] {
  const list = Array.isArray(input) ? input : [input];
  if (list.length === 0) throw new LockKeyError('invalid lock keys: the array is empty', input);
  const unique = [...new Set(list.map((k) => validateLockKey(k)))];
  return unique.sort();
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
