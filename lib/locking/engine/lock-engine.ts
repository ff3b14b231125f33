import { performance } from 'node:perf_hooks';
import { Leaders } from '../../leader/leaders.js';
import type { CampaignOptions, LeaderFn, LeaderInfo, StopCampaign } from '../../leader/leader.types.js';
import type { RedisDriver } from '../../redis/driver/redis-driver.js';
import type { LockStoreFactory } from '../../store/lock-store.js';
import type { AcquireOptions, LockHandle, LockInfo, LockPing } from '../../types/lock.types.js';
import type { PermitHandle, PermitInfo, PermitOptions } from '../../types/permit.types.js';
import { consoleLogger } from './engine-options.js';
import type { LockEngineOptions, ModeFixedOptions, SkipOptions, WaitOptions } from './engine-options.js';
import { EngineAdmin } from './engine-admin.js';
import { EngineCalls } from './engine-calls.js';
import { validateKeys } from './lock-keys.js';
import { assembleEngine, type EngineParts } from './engine-parts.js';
import { checkEngineServer, scanConnectionsOf } from './engine-store.js';
import { LockEventBus, type LockEventListener, type LockEventName, type LockLogger } from '../events/lock-events.js';
import type { LockHandleImpl } from '../holds/lock-handle.js';
import {
  DEFAULT_PING_TIMEOUT_MS,
  resolveEngineSettings,
  type LockEngineSettings,
} from '../settings/engine-settings.js';
import { currentHandle, newInstanceId, runAsNewOwner, runInOwnerScope, runWithHandle } from '../holds/owner-context.js';
import { runLocked } from '../acquire/skipping.js';
import type { EngineActivity } from '../activity/engine-activity.js';
import type { Observable } from 'rxjs';

type LockKeys = string | readonly string[]; // one lock key, or several taken together (all or nothing)
type LockedFn<T> = (lock: LockHandle) => T | Promise<T>; // the work done under a lock

/**
 * The framework-free lock engine: read/write locks with reentrancy, leases renewed by a batched watchdog, pub/sub
 * wake-ups and fencing tokens. `LockService` is this engine plus Nest's lifecycle; use it directly without Nest.
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
  private readonly parts: EngineParts; // store, keeper, waiting room, acquirer, leftovers, alarm, semaphores
  private readonly calls: EngineCalls;
  private readonly admin: EngineAdmin;
  private readonly leaders: Leaders;
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
    this.parts = assembleEngine(options.redis, this.settings, this.logger, this.events, this.instanceId, store, {
      closing: () => this.closing,
      closed: () => this.closed,
      inspect: (key) => this.inspect(key),
      track: (acquisition, boundMs, key) => this.calls.track(acquisition, boundMs, key),
    });
    this.calls = new EngineCalls(this.settings, this.parts.acquirer, this.instanceId, this.logger, () => this.closed);
    this.admin = new EngineAdmin(this.parts, () => this.closed);
    this.parts.alarm.start();
    this.leaders = new Leaders(this, this.logger, (fn) => runAsNewOwner(this.instanceId, fn));
  }

  /** Number of holds this process currently keeps (and renews). */
  get heldCount(): number {
    return this.parts.keeper.size;
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

  /** The `signal` of `current()`: aborted with `LockLostError` if that lock is lost. */
  currentSignal(): AbortSignal | undefined {
    return currentHandle()?.signal;
  }

  /**
   * Waits up to `waitTimeoutMs` for the lock on `keys` (all of them, or none).
   * @throws {LockAcquireTimeoutError} when the lock was not granted in time.
   * @throws {LockKeyError} for an invalid key, {LockConfigError} for an invalid option, before Redis is touched.
   * @throws {LockUpgradeError} when the caller holds the read lock and asks for the write lock.
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer in time (settles within
   * `waitTimeoutMs + commandTimeoutMs` whatever Redis does).
   */
  acquire(keys: LockKeys, options?: AcquireOptions): Promise<LockHandle> {
    return this.calls.run(() => validateKeys(keys), options, true) as Promise<LockHandle>;
  }

  /** One attempt without waiting: the handle, or `null` if the lock is taken. Rejects as `acquire` does otherwise. */
  tryAcquire(keys: LockKeys, options?: AcquireOptions): Promise<LockHandle | null> {
    return this.calls.run(() => validateKeys(keys), options, false);
  }

  /** @internal `acquire` for keys already checked with `validateLockKey` (the decorators check them with context). */
  acquireChecked(keys: readonly string[], options: AcquireOptions | undefined): Promise<LockHandle> {
    return this.calls.run(() => keys, options, true) as Promise<LockHandle>;
  }

  /**
   * @internal The decorators' acquisition for checked keys: waits (`ifLocked: 'wait'`), or one attempt that resolves
   * `null` after a `skipped` event when busy (or Redis unreachable, unless `failWhenUnavailable`: then it rejects).
   */
  acquireOrSkipChecked(
    keys: readonly string[],
    options: AcquireOptions | undefined,
    failWhenUnavailable = false,
  ): Promise<LockHandle | null> {
    return this.calls.runOrSkip(keys, options, this.events, failWhenUnavailable);
  }

  /**
   * Acquires (write by default), runs `fn(lock)` with the lock as the current one, releases on success and on
   * throw, and returns what `fn` returns. Nested calls in the same async context re-enter.
   * @example await engine.withLock(['account:1', 'account:2'], () => transfer(1, 2, amount));
   */
  withLock<T>(keys: LockKeys, fn: LockedFn<T>, options: SkipOptions): Promise<T | undefined>;
  withLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: WaitOptions): Promise<T>;
  withLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: AcquireOptions): Promise<T | undefined>;
  withLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: AcquireOptions): Promise<T | undefined> {
    return runLocked(this, this.events, this.logger, keys, fn, options);
  }

  /** `withLock` in read mode: shared with other readers. */
  withReadLock<T>(keys: LockKeys, fn: LockedFn<T>, options: ModeFixedOptions & SkipOptions): Promise<T | undefined>;
  withReadLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: ModeFixedOptions & WaitOptions): Promise<T>;
  withReadLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: ModeFixedOptions): Promise<T | undefined>;
  withReadLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: ModeFixedOptions): Promise<T | undefined> {
    return this.withLock(keys, fn, { ...options, mode: 'read' });
  }

  /** `withLock` in write mode: exclusive. */
  withWriteLock<T>(keys: LockKeys, fn: LockedFn<T>, options: ModeFixedOptions & SkipOptions): Promise<T | undefined>;
  withWriteLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: ModeFixedOptions & WaitOptions): Promise<T>;
  withWriteLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: ModeFixedOptions): Promise<T | undefined>;
  withWriteLock<T>(keys: LockKeys, fn: LockedFn<T>, options?: ModeFixedOptions): Promise<T | undefined> {
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
  release(key: string, token: string): Promise<boolean> {
    return this.admin.release(key, token);
  }

  /**
   * Frees `key` whoever holds it (holders learn it at their next renewal); `true` if it was held. A semaphore's key:
   * `LockConfigError` (`forceReleasePermits`). @throws {LockUnavailableError} no answer in `commandTimeoutMs`.
   */
  forceRelease(key: string): Promise<boolean> {
    return this.admin.forceRelease(key);
  }

  /**
   * Who holds `key` and who waits, from Redis; `null` when nobody holds it. An invalid key rejects (never throws).
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer within `commandTimeoutMs`.
   */
  inspect(key: string): Promise<LockInfo | null> {
    return this.admin.inspect(key);
  }

  /** @internal The connections holding this engine's keys, one per master, for a key scan (board, CLI). */
  scanConnections(): readonly RedisDriver[] {
    return scanConnectionsOf(this.parts.backend);
  }

  /** Asks the server once what it supports; `checkEngineServer` says what it checks and what it does. */
  checkServer(): Promise<void> {
    return checkEngineServer(this.parts.backend, this.settings.commandTimeoutMs, this.logger);
  }

  /** @internal This process's holds and waits right now, and their numbers per kind (board, gauges, health). */
  activity(): EngineActivity {
    return this.parts.activity;
  }

  /**
   * Waits up to `waitTimeoutMs` for one of the `limit` permits of semaphore `key` (docs/semaphores.md).
   * @throws {LockAcquireTimeoutError} {LockKeyError} {LockConfigError} {PermitDeadlockError} {LockUnavailableError}
   */
  acquirePermit(key: string, options: PermitOptions): Promise<PermitHandle> {
    return this.parts.permits.acquire(key, options, true) as Promise<PermitHandle>;
  }

  /** One attempt without waiting: the permit, or `null` if all `limit` are taken. Rejects as `acquirePermit` does. */
  tryAcquirePermit(key: string, options: PermitOptions): Promise<PermitHandle | null> {
    return this.parts.permits.acquire(key, options, false);
  }

  /** Takes a permit, runs `fn(permit)`, gives the permit back on success and on throw; returns what `fn` returns. */
  withPermit<T>(key: string, fn: (permit: PermitHandle) => T | Promise<T>, options: PermitOptions): Promise<T> {
    return this.parts.permits.withPermit(key, fn, options);
  }

  /** Stores `limit` as semaphore `key`'s limit, whatever callers name; resolves the limit before (0: none). */
  setPermitLimit(key: string, limit: number): Promise<number> {
    return this.parts.permits.setLimit(key, limit);
  }

  /** Semaphore `key` as Redis has it (limit, holders, waiters); `null` when it is not in use. */
  inspectPermits(key: string): Promise<PermitInfo | null> {
    return this.parts.permits.inspect(key);
  }

  /** Frees a permit by its `token`, an owner's (`{ owner }`), or all of `key`'s; resolves how many were held. */
  forceReleasePermits(key: string, holder?: string | { readonly owner: string }): Promise<number> {
    return this.parts.permits.forceRelease(key, holder);
  }

  /** Campaigns for `name` (docs/leader-election.md): runs `fn(lead)` while elected; returns the stop function. */
  campaign(name: string, fn: LeaderFn, options?: CampaignOptions): StopCampaign {
    return this.leaders.campaign(name, fn, options);
  }

  /** The leader of `name` (app, host, pid, since, term) as Redis has it, or `null`. */
  leader(name: string): Promise<LeaderInfo | null> {
    return this.leaders.leader(name);
  }

  /** A campaign of this engine leads `name` now. */
  isLeader(name: string): boolean {
    return this.leaders.isLeader(name);
  }

  /** Gives up this engine's leadership of `name` now (resolves once released); it campaigns again later. */
  resign(name: string): Promise<boolean> {
    return this.leaders.resign(name);
  }

  /** The leader of `name` (or `null`), on subscription and within a second of every change. */
  watchLeader(name: string): Observable<LeaderInfo | null> {
    return this.leaders.watchLeader(name);
  }

  /** Round trip to Redis on the command and the wake-up connections, each bounded by `timeoutMs`. Never rejects. */
  ping(timeoutMs = DEFAULT_PING_TIMEOUT_MS): Promise<LockPing> {
    return this.parts.store.ping(timeoutMs);
  }

  /** Graceful shutdown, step 1: waiting and new acquisitions reject (`LockClosedError`); holders finish. */
  beginShutdown(): void {
    if (this.closing) return;
    this.closing = true;
    void this.leaders.stopAll();
    this.parts.alarm.stop();
    this.parts.recheck.stop();
    this.parts.room.wakeAll();
    this.parts.keeper.beginShutdown(!this.closed);
  }

  /**
   * Stops the engine: pending acquisitions reject with `LockClosedError`, every hold ends (its signal aborted) and is
   * released, and the connections the engine opened close. Bounded: `commandTimeoutMs` per round trip at most.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.beginShutdown();
    await this.leaders.stopAll();
    await this.calls.settled();
    await this.parts.keeper.releaseAll();
    await this.parts.leftovers.settle(performance.now() + this.settings.commandTimeoutMs);
    this.parts.leftovers.stop();
    await this.parts.store.close();
  }
}
