import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LockEngine } from '../locking/engine/lock-engine.js';
import { attachOpenTelemetryMetrics } from '../observability/lock-metrics.js';
import type { LockStoreFactory } from '../store/lock-store.js';
import { LockRegistry } from './lock-registry.js';
import { LOCK_STORE_FACTORY } from './lock-store.token.js';
import type { LockRuntime } from './lock-registry.js';
import { resolveModuleSettings } from './module-settings.js';
import type { ModuleSettings } from './module-settings.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { MODULE_OPTIONS_TOKEN } from './redis-lock.module-definition.js';

/**
 * Distributed read/write locks on Redis, injectable anywhere once `RedisLockModule` is imported. It is the
 * framework-free `LockEngine` (every lock, semaphore and leadership call is the engine's, documented there) plus what
 * Nest adds: the module's options, the registry the `@WriteLocked` / `@ReadLocked` decorators reach, the start-up
 * check and metrics, and the two shutdown steps.
 *
 * @example
 * constructor(private readonly locks: LockService) {}
 * transfer(from: string, to: string, amount: number) {
 *   return this.locks.withWriteLock([`account:${from}`, `account:${to}`], () => this.ledger.move(from, to, amount));
 * }
 */
@Injectable()
export class LockService extends LockEngine implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly moduleSettings: ModuleSettings;
  private readonly nestLogger: Logger;
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
    const moduleSettings = resolveModuleSettings(options);
    const logger = new Logger('RedisLock');
    super({ ...options, logger: options.logger ?? logger }, store as LockStoreFactory);
    this.moduleSettings = moduleSettings;
    this.nestLogger = logger;
    this.runtime = { engine: this, settings: moduleSettings, warn: (m) => logger.warn(m) };
    LockRegistry.register(this.runtime);
  }

  /** @internal The engine under this service: the service itself (the lock board, health indicator and jobs read it). */
  get engine(): LockEngine {
    return this;
  }

  /**
   * Checks once what the server supports (a `LockConfigError` naming what is missing fails the start-up: see
   * docs/managed-services.md), then starts the OpenTelemetry metrics when enabled and `@opentelemetry/api` is installed.
   */
  async onModuleInit(): Promise<void> {
    await this.checkServer();
    if (this.moduleSettings.metrics === false) return;
    const { metrics, metricsRequested } = this.moduleSettings;
    this.detachMetrics = await attachOpenTelemetryMetrics(this, metrics, this.nestLogger, metricsRequested);
  }

  /**
   * Shutdown, step 1 (before the HTTP server stops): waiting acquisitions reject with `LockClosedError` (HTTP 503
   * on a decorated controller) and new ones are refused; requests holding locks finish.
   */
  beforeApplicationShutdown(): void {
    this.beginShutdown();
  }

  /** Shutdown, step 2: releases this process's remaining locks and closes the connections the library opened. */
  async onApplicationShutdown(): Promise<void> {
    LockRegistry.unregister(this.runtime);
    this.detachMetrics?.();
    await this.close();
  }
}
