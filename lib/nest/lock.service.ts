import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Observable } from 'rxjs';
import type { CampaignOptions, LeaderFn, LeaderInfo, StopCampaign } from '../leader/leader.types.js';
import { LockEngine } from '../locking/lock-engine.js';
import type { ModeFixedOptions, SkipOptions, WaitOptions } from '../locking/lock-engine.js';
import type { LockEventListener, LockEventName } from '../locking/lock-events.js';
import { attachOpenTelemetryMetrics } from '../observability/lock-metrics.js';
import type { LockStoreFactory } from '../store/lock-store.js';
import type { AcquireOptions, LockHandle, LockInfo, LockPing } from '../types/lock.types.js';
import type { PermitHandle, PermitInfo, PermitOptions } from '../types/permit.types.js';
import { LockRegistry } from './lock-registry.js';
import { LOCK_STORE_FACTORY } from './lock-store.token.js';
import type { LockRuntime } from './lock-registry.js';
import { resolveModuleSettings } from './module-settings.js';
import type { ModuleSettings } from './module-settings.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { MODULE_OPTIONS_TOKEN } from './redis-lock.module-definition.js';

/**
 * Distributed read/write locks on Redis, injectable anywhere once `RedisLockModule` is imported. A thin Nest
 * wrapper over `LockEngine`; it also serves the `@WriteLocked` / `@ReadLocked` decorators.
 *
 * @example
 * constructor(private readonly locks: LockService) {}
 * transfer(from: string, to: string, amount: number) {
 *   return this.locks.withWriteLock([`account:${from}`, `account:${to}`], () => this.ledger.move(from, to, amount));
 * }
 */
@Injectable()
export class LockService implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  /** @internal The engine under this service (the lock board reads from it). */
  readonly engine: LockEngine;
  private readonly settings: ModuleSettings;
  private readonly logger = new Logger('RedisLock');
  private readonly runtime: LockRuntime;
  private detachMetrics: (() => void) | undefined;

  /** @throws {LockConfigError} naming the option, when a module option is invalid (at start-up). */
  constructor(options: RedisLockModuleOptions);
  /** @internal With a store other than Redis (the testing module). */
  constructor(options: RedisLockModuleOptions, store: LockStoreFactory | undefined);
  constructor(
    @Inject(MODULE_OPTIONS_TOKEN) options: RedisLockModuleOptions,
    @Optional() @Inject(LOCK_STORE_FACTORY) store?: LockStoreFactory,
  ) {
    this.settings = resolveModuleSettings(options);
    const engineOptions = { ...options, logger: options.logger ?? this.logger };
    this.engine = store ? new LockEngine(engineOptions, store) : new LockEngine(engineOptions);
    const logger = this.logger;
    this.runtime = { engine: this.engine, settings: this.settings, warn: (m) => logger.warn(m) };
    LockRegistry.register(this.runtime);
  }

  /**
   * Checks once what the server supports (a `LockConfigError` naming what is missing fails the start-up: see
   * docs/managed-services.md), then starts the OpenTelemetry metrics when enabled and `@opentelemetry/api` is installed.
   */
  async onModuleInit(): Promise<void> {
    await this.engine.checkServer();
    if (this.settings.metrics === false) return;
    const { metrics, metricsRequested } = this.settings;
    this.detachMetrics = await attachOpenTelemetryMetrics(this.engine, metrics, this.logger, metricsRequested);
  }

  /**
   * Waits up to `waitTimeoutMs` for the lock on `keys` (all of them, or none). Release the handle when done.
   * @throws {LockAcquireTimeoutError} when the lock was not granted in time.
   * @throws {LockKeyError} / {LockConfigError} for an invalid key or option, before Redis is touched.
   * @throws {LockUpgradeError} when the caller holds the read lock and asks for the write lock.
   * @throws {LockUnavailableError} when Redis cannot be reached or does not answer in time (settles within
   * `waitTimeoutMs + commandTimeoutMs` whatever Redis does).
   */
  acquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle> {
    return this.engine.acquire(keys, options);
  }

  /** One attempt, no waiting: the handle, or `null` when the lock is taken. */
  tryAcquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle | null> {
    return this.engine.tryAcquire(keys, options);
  }

  /**
   * Acquires (write by default), runs `fn(handle)`, releases on success and on throw; returns what `fn` returns.
   * Nested calls in the same async context re-enter. Rejects as `acquire` does. With `ifLocked: 'skip'`, a busy lock
   * (or Redis unavailable) means `fn` is not run and the call resolves to `undefined` (a `skipped` event says why).
   * @example const saved = await locks.withLock(`article:${id}`, () => this.articles.save(id, dto));
   */
  withLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options: SkipOptions,
  ): Promise<T | undefined>;
  withLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: WaitOptions,
  ): Promise<T>;
  withLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: AcquireOptions,
  ): Promise<T | undefined>;
  withLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: AcquireOptions,
  ): Promise<T | undefined> {
    return this.engine.withLock(keys, fn, options);
  }

  /** `withLock` in read mode: shared with other readers. */
  withReadLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options: ModeFixedOptions & SkipOptions,
  ): Promise<T | undefined>;
  withReadLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: ModeFixedOptions & WaitOptions,
  ): Promise<T>;
  withReadLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: ModeFixedOptions,
  ): Promise<T | undefined>;
  withReadLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: ModeFixedOptions,
  ): Promise<T | undefined> {
    return this.engine.withReadLock(keys, fn, options);
  }

  /** `withLock` in write mode: exclusive. */
  withWriteLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options: ModeFixedOptions & SkipOptions,
  ): Promise<T | undefined>;
  withWriteLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: ModeFixedOptions & WaitOptions,
  ): Promise<T>;
  withWriteLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: ModeFixedOptions,
  ): Promise<T | undefined>;
  withWriteLock<T>(
    keys: string | readonly string[],
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: ModeFixedOptions,
  ): Promise<T | undefined> {
    return this.engine.withWriteLock(keys, fn, options);
  }

  /** Frees the hold `token` has on `key`, from any process. `false` when that token holds nothing there. */
  release(key: string, token: string): Promise<boolean> {
    return this.engine.release(key, token);
  }

  /** Administrative: frees `key` whoever holds it. `true` if it was held. */
  forceRelease(key: string): Promise<boolean> {
    return this.engine.forceRelease(key);
  }

  /** Holders, waiters and fencing token of `key`; `null` when nobody holds it. */
  inspect(key: string): Promise<LockInfo | null> {
    return this.engine.inspect(key);
  }

  /** Waits for one of the `limit` permits of semaphore `key` (docs/semaphores.md). */
  acquirePermit(key: string, options: PermitOptions): Promise<PermitHandle> {
    return this.engine.acquirePermit(key, options);
  }

  /** One attempt: a permit, or `null` when all `limit` are taken. */
  tryAcquirePermit(key: string, options: PermitOptions): Promise<PermitHandle | null> {
    return this.engine.tryAcquirePermit(key, options);
  }

  /** Takes a permit, runs `fn(permit)`, gives it back on success and on throw. */
  withPermit<T>(key: string, fn: (permit: PermitHandle) => T | Promise<T>, options: PermitOptions): Promise<T> {
    return this.engine.withPermit(key, fn, options);
  }

  /** Stores `limit` as semaphore `key`'s limit, whatever callers name; resolves the one before (0: none). */
  setPermitLimit(key: string, limit: number): Promise<number> {
    return this.engine.setPermitLimit(key, limit);
  }

  /** Limit, holders and waiters of semaphore `key`; `null` when it is not in use. */
  inspectPermits(key: string): Promise<PermitInfo | null> {
    return this.engine.inspectPermits(key);
  }

  /** Administrative: frees a permit by its `token`, an owner's (`{ owner }` as inspected), or all of `key`'s. */
  forceReleasePermits(key: string, holder?: string | { readonly owner: string }): Promise<number> {
    return this.engine.forceReleasePermits(key, holder);
  }

  /**
   * Campaigns for leadership of `name` (docs/leader-election.md): once elected, runs `fn(lead)` for as long as the
   * term lasts (`lead.signal` aborts when it ends), then resigns and campaigns again after `restartDelayMs`. Returns
   * the stop function. `@Leader` does this for a provider method.
   */
  campaign(name: string, fn: LeaderFn, options?: CampaignOptions): StopCampaign {
    return this.engine.campaign(name, fn, options);
  }

  /** The leader of `name` (`app`, `host`, `pid`, `since`, `term`) as Redis has it, or `null`. */
  leader(name: string): Promise<LeaderInfo | null> {
    return this.engine.leader(name);
  }

  /** This process leads `name` now. */
  isLeader(name: string): boolean {
    return this.engine.isLeader(name);
  }

  /** Gives up this process's leadership of `name` (resolves once released); it campaigns again after `restartDelayMs`. */
  resign(name: string): Promise<boolean> {
    return this.engine.resign(name);
  }

  /** The leader of `name` (or `null`): on subscription, then within a second of every change. */
  watchLeader(name: string): Observable<LeaderInfo | null> {
    return this.engine.watchLeader(name);
  }

  /** The lock of the current decorated method or `withLock` callback, if any. */
  current(): LockHandle | undefined {
    return this.engine.current();
  }

  /** The `signal` of `current()`: aborted with `LockLostError` if that lock is lost. */
  currentSignal(): AbortSignal | undefined {
    return this.engine.current()?.signal;
  }

  /** Subscribes to a lock event; returns the unsubscribe function. */
  on<E extends LockEventName>(event: E, listener: LockEventListener<E>): () => void {
    return this.engine.on(event, listener);
  }

  /**
   * Round trip to Redis on the command and wake-up connections, each bounded by `timeoutMs` (default 1000). Never
   * rejects.
   */
  ping(timeoutMs?: number): Promise<LockPing> {
    return this.engine.ping(timeoutMs);
  }

  /** Number of locks this process holds (and renews) right now. */
  get heldCount(): number {
    return this.engine.heldCount;
  }

  /**
   * Shutdown, step 1 (before the HTTP server stops): waiting acquisitions reject with `LockClosedError` (HTTP 503
   * on a decorated controller) and new ones are refused; requests holding locks finish.
   */
  beforeApplicationShutdown(): void {
    this.engine.beginShutdown();
  }

  /** Shutdown, step 2: releases this process's remaining locks and closes the connections the library opened. */
  async onApplicationShutdown(): Promise<void> {
    LockRegistry.unregister(this.runtime);
    this.detachMetrics?.();
    await this.engine.close();
  }
}
