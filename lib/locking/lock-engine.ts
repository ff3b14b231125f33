import { performance } from 'node:perf_hooks';
import { LockClosedError } from '../errors/lock-closed.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { validateLockKey } from '../redis/key-layout.js';
import type { RedisClient } from '../redis/connection.js';
import type { ConnectionStateChange, LockStore, LockStoreFactory } from '../redis/lock-store.js';
import type { AcquireOptions, LockHandle, LockInfo, LockPing } from '../types/lock.types.js';
import { Acquirer } from './acquisition.js';
import { consoleLogger } from './engine-options.js';
import type { LockEngineOptions, ModeFixedOptions, SkipOptions, WaitOptions } from './engine-options.js';
import { BOUND_MARGIN_MS, lockOrder, settleWithin, validateKeys } from './call-bound.js';
import { logConnectionChange, openEngineStore, scanConnectionsOf } from './engine-store.js';
import { HoldKeeper } from './hold-keeper.js';
import { Leftovers } from './leftovers.js';
import { LockAlarm, describeHeldTooLong } from './lock-alarm.js';
import { LockEventBus, asError, errorText } from './lock-events.js';
import type { LockEventListener, LockEventName, LockLogger } from './lock-events.js';
import type { LockHandleImpl } from './lock-handle.js';
import { DEFAULT_PING_TIMEOUT_MS, resolveAcquireOptions, resolveEngineSettings } from './lock-options.js';
import type { LockEngineSettings } from './lock-options.js';
import { currentHandle, currentOwner, newInstanceId, runInOwnerScope, runWithHandle } from './owner-context.js';
import { acquireOrSkip } from './skipping.js';
import { WaitingRoom } from './waiting.js';
import type { WaitRecord } from './waiting.js';

export type { LockEngineOptions, ModeFixedOptions, SkipOptions, WaitOptions } from './engine-options.js';

/**
 * The framework-free lock engine: read/write locks with reentrancy, leases renewed by a batched watchdog, pub/sub
 * wake-ups and fencing tokens. `LockService` is a thin Nest wrapper over it; use it directly without Nest.
 *
 * @example
 * const engine = new LockEngine({ redis: 'redis://127.0.0.1:6379' });
 * await engine.withLock('invoice:42', async (lock) => save(invoice, lock.fencingToken));
 * await engine.close();
 */
export class LockEngine {
  /** The settings in force, defaults merged. */
  readonly settings: LockEngineSettings;
  /** @internal Random id of this engine instance, part of every owner id. */
  readonly instanceId = newInstanceId();
  private readonly logger: LockLogger;
  private readonly events: LockEventBus;
  private readonly store: LockStore;
  /** The store under the bounds (a key scan reads its connections). */
  private readonly backend: LockStore;
  private readonly keeper: HoldKeeper;
  private readonly room: WaitingRoom;
  private readonly acquirer: Acquirer;
  private readonly leftovers: Leftovers;
  private readonly alarm: LockAlarm;
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;
  /** Set by `beginShutdown`: new holds are refused and waiters rejected; re-entry by current holders goes on. */
  private closing = false;

  /** @throws {LockConfigError} naming the option, when an option is invalid. */
  constructor(options: LockEngineOptions);
  /** @internal An engine over another store than Redis (`options.redis` is ignored). */
  constructor(options: LockEngineOptions, store: LockStoreFactory);
  constructor(options: LockEngineOptions, store?: LockStoreFactory) {
    this.settings = resolveEngineSettings(options);
    this.logger = options.logger ?? consoleLogger;
    this.events = new LockEventBus(this.logger);
    const { store: bounded, backend, identity } = openEngineStore(options.redis, this.settings, this.logger, (change) => this.connectionChanged(change), store);
    this.store = bounded;
    this.backend = backend;
    this.leftovers = new Leftovers(this.store, this.logger);
    this.keeper = new HoldKeeper(this.store, this.events, this.logger, this.leftovers, this.settings.commandTimeoutMs);
    this.room = new WaitingRoom(this.store, this.instanceId);
    this.acquirer = new Acquirer(
      this.store,
      this.keeper,
      this.room,
      this.events,
      this.logger,
      this.instanceId,
      () => this.closing,
      this.leftovers,
      this.settings.commandTimeoutMs,
    );
    this.alarm = new LockAlarm(this.settings, identity, this.keeper, this.room, (key) => this.inspect(key), (event) => {
      this.logger.warn(describeHeldTooLong(event));
      this.events.emit('held-too-long', event);
    });
    this.alarm.start();
  }

  /** Number of holds this process currently keeps (and renews). */
  get heldCount(): number {
    return this.keeper.size;
  }

  /** Subscribes to a lock event; returns the function that unsubscribes. */
  on<E extends LockEventName>(event: E, listener: LockEventListener<E>): () => void {
    return this.events.on(event, listener);
  }

  off<E extends LockEventName>(event: E, listener: LockEventListener<E>): void {
    this.events.off(event, listener);
  }

  /** The innermost lock of the current async context (set by `withLock` and the decorators), if any. */
  current(): LockHandle | undefined {
    return currentHandle();
  }

  /**
   * Waits up to `waitTimeoutMs` for the lock on `keys` (all of them, or none).
   * @throws {LockAcquireTimeoutError} when the lock was not granted in time.
   * @throws {LockKeyError} for an invalid key, {LockConfigError} for an invalid option, before Redis is touched.
   * @throws {LockUpgradeError} when the caller holds the read lock and asks for the write lock.
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer in time (settles within
   * `waitTimeoutMs + commandTimeoutMs` whatever Redis does).
   */
  acquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle> {
    return this.run(() => validateKeys(keys), options, true) as Promise<LockHandle>;
  }

  /** One attempt without waiting: the handle, or `null` if the lock is taken. Rejects as `acquire` does otherwise. */
  tryAcquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle | null> {
    return this.run(() => validateKeys(keys), options, false);
  }

  /** @internal `acquire` for keys already checked with `validateLockKey` (the decorators check them with context). */
  acquireChecked(keys: readonly string[], options: AcquireOptions | undefined): Promise<LockHandle> {
    return this.run(() => keys, options, true) as Promise<LockHandle>;
  }

  /**
   * @internal The decorators' acquisition for checked keys: waits (`ifLocked: 'wait'`), or one attempt that resolves
   * `null` after a `skipped` event when the lock is busy (and, unless `failWhenUnavailable`, when Redis cannot be
   * reached: then it rejects as `tryAcquire` does).
   */
  acquireOrSkipChecked(keys: readonly string[], options: AcquireOptions | undefined, failWhenUnavailable = false): Promise<LockHandle | null> {
    if (options?.ifLocked !== 'skip') return this.acquireChecked(keys, options);
    const what = { key: keys[0], mode: options.mode ?? 'write', owner: currentOwner(this.instanceId).id };
    const attempt = () => this.run(() => keys, options, false);
    if (!failWhenUnavailable) return acquireOrSkip(attempt, this.events, what);
    return attempt().then((handle) => {
      if (!handle) this.events.emit('skipped', { ...what, reason: 'busy' });
      return handle;
    });
  }

  /**
   * Acquires (write by default), runs `fn(lock)` with the lock as the current one, releases on success and on
   * throw, and returns what `fn` returns. Nested calls in the same async context re-enter.
   * @example await engine.withLock(['account:1', 'account:2'], () => transfer(1, 2, amount));
   */
  withLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options: SkipOptions): Promise<T | undefined>;
  withLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: WaitOptions): Promise<T>;
  withLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T | undefined>;
  withLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T | undefined> {
    return runInOwnerScope(this.instanceId, async () => {
      const handle =
        options?.ifLocked === 'skip'
          ? await acquireOrSkip(() => this.tryAcquire(keys, options), this.events, {
              key: Array.isArray(keys) ? String(keys[0]) : String(keys),
              mode: options.mode ?? 'write',
              owner: currentOwner(this.instanceId).id,
            })
          : await this.acquire(keys, options);
      if (!handle) return undefined;
      try {
        return await this.runWithHandle(handle, () => fn(handle));
      } finally {
        await handle.release().catch((err: unknown) => {
          this.logger.warn(`releasing "${handle.key}" failed (its lease will free it): ${errorText(err)}`);
        });
      }
    });
  }

  /** `withLock` in read mode: shared with other readers. */
  withReadLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options: ModeFixedOptions & SkipOptions): Promise<T | undefined>;
  withReadLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions & WaitOptions): Promise<T>;
  withReadLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions): Promise<T | undefined>;
  withReadLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions): Promise<T | undefined> {
    return this.withLock(keys, fn, { ...options, mode: 'read' });
  }

  /** `withLock` in write mode: exclusive. */
  withWriteLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options: ModeFixedOptions & SkipOptions): Promise<T | undefined>;
  withWriteLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions & WaitOptions): Promise<T>;
  withWriteLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions): Promise<T | undefined>;
  withWriteLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions): Promise<T | undefined> {
    return this.withLock(keys, fn, { ...options, mode: 'write' });
  }

  /** @internal Runs `fn` as the current owner, starting a new owner context when there is none. */
  runInOwnerScope<T>(fn: () => T): T {
    return runInOwnerScope(this.instanceId, fn);
  }

  /** @internal Runs `fn` in the current owner context with `handle` as the current lock. */
  runWithHandle<T>(handle: LockHandle, fn: () => T): T {
    return runWithHandle(handle, (handle as LockHandleImpl).owner, fn);
  }

  /**
   * Releases the hold that `token` has on `key`, from any process: every reentrant level at once.
   * Resolves `false` when that token holds nothing there.
   * @throws {LockKeyError} for an invalid key or token.
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer within `commandTimeoutMs`.
   */
  async release(key: string, token: string): Promise<boolean> {
    const lock = this.store.lock(validateLockKey(key));
    if (typeof token !== 'string' || token.length === 0) {
      throw new LockKeyError(`invalid token for "${key}": expected the non-empty token of a LockHandle`, token, key);
    }
    this.throwIfClosed(key);
    this.keeper.endByToken(key, token);
    return (await this.store.release(lock, token, undefined)) === 'ended';
  }

  /**
   * Frees `key` whoever holds it; holders find out at their next renewal. Resolves `true` if it was held.
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer within `commandTimeoutMs`.
   */
  async forceRelease(key: string): Promise<boolean> {
    const lock = this.store.lock(validateLockKey(key));
    this.throwIfClosed(key);
    const sentAt = performance.now();
    const held = await this.store.forceRelease(lock);
    this.keeper.loseAll(key, sentAt);
    return held;
  }

  /**
   * Who holds `key` and who waits, from Redis; `null` when nobody holds it. An invalid key rejects (never throws).
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer within `commandTimeoutMs`.
   */
  async inspect(key: string): Promise<LockInfo | null> {
    const lock = this.store.lock(validateLockKey(key));
    this.throwIfClosed(key);
    return this.store.inspect(lock);
  }

  /**
   * @internal The connections that hold this engine's keys, one per independent master (a `Cluster` client stands for
   * all its masters), for a key scan (the lock board, the CLI). Empty for a store without Redis (the memory store).
   */
  scanConnections(): readonly RedisClient[] {
    return scanConnectionsOf(this.backend);
  }

  /** @internal The acquisitions of this engine waiting right now (the deadlock alarm's records). */
  waitRecords(): Iterable<WaitRecord> {
    return this.room.records();
  }

  /** Round trip to Redis on the command and the wake-up connections, each bounded by `timeoutMs`. Never rejects. */
  ping(timeoutMs = DEFAULT_PING_TIMEOUT_MS): Promise<LockPing> {
    return this.store.ping(timeoutMs);
  }

  /**
   * First step of a graceful shutdown: waiting and new acquisitions reject with `LockClosedError`, while the
   * current holders finish their work (re-entering their own locks still works). `close()` does the rest.
   */
  beginShutdown(): void {
    if (this.closing) return;
    this.closing = true;
    this.alarm.stop();
    this.room.wakeAll();
  }

  /**
   * Stops the engine: pending acquisitions reject with `LockClosedError`, the watchdog stops, every hold of
   * this process is released in Redis, and the connections the engine opened are closed. Bounded: with Redis
   * unreachable it gives up on each round trip after `commandTimeoutMs` (the leases free what it could not).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.beginShutdown();
    await Promise.allSettled([...this.inflight]);
    await this.keeper.releaseAll();
    await this.leftovers.settle(performance.now() + this.settings.commandTimeoutMs);
    this.leftovers.stop();
    await this.store.close();
  }

  private throwIfClosed(key: string): void {
    if (this.closed) throw new LockClosedError(key);
  }

  /** Logs a connection change; waiters retry at once when the wake-up connection is back (a wake-up may be lost). */
  private connectionChanged(change: ConnectionStateChange): void {
    if (logConnectionChange(this.logger, change)) this.room.wakeAll();
  }

  /** Checks keys and options (rejecting, never throwing), then acquires; tracked so `close` can wait for it. */
  private run(keys: () => readonly string[], options: AcquireOptions | undefined, waiting: boolean): Promise<LockHandle | null> {
    let acquisition: Promise<LockHandle | null>;
    let boundMs: number;
    let first: string;
    try {
      const ordered = lockOrder(keys());
      if (ordered.length === 0) throw new LockKeyError('invalid lock keys: no key given', ordered);
      first = ordered[0];
      const resolved = resolveAcquireOptions(this.settings, options, first);
      if (this.closed) throw new LockClosedError(first);
      boundMs = (waiting ? resolved.waitTimeoutMs : 0) + this.settings.commandTimeoutMs;
      const settleBy = performance.now() + boundMs;
      acquisition = this.acquirer.acquire({ owner: currentOwner(this.instanceId), keys: ordered, options: resolved, waiting, settleBy });
    } catch (err) {
      // Bad keys or options: reported as a rejection, like every other failure of an acquisition.
      return Promise.reject(asError(err));
    }
    this.inflight.add(acquisition);
    const forget = () => this.inflight.delete(acquisition);
    acquisition.then(forget, forget);
    return boundMs === Number.POSITIVE_INFINITY ? acquisition : settleWithin(acquisition, boundMs + BOUND_MARGIN_MS, first, this.logger);
  }
}
