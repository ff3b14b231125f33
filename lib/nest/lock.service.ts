import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { attachOpenTelemetryMetrics } from '../observability/lock-metrics.js';
import type { LockEventListener, LockEventName } from '../locking/lock-events.js';
import { LockEngine } from '../locking/lock-engine.js';
import type { AcquireOptions, LockHandle, LockInfo } from '../locking/lock.types.js';
import type { LockRuntime } from './lock-registry.js';
import { LockRegistry } from './lock-registry.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { MODULE_OPTIONS_TOKEN } from './redis-lock.module-definition.js';

/** Per-call options of `withReadLock` / `withWriteLock` (the mode is given by the method). */
export type ModeFixedOptions = Omit<AcquireOptions, 'mode'>;

/**
 * Distributed read/write locks on Redis, injectable anywhere. A thin Nest wrapper over `LockEngine`.
 */
@Injectable()
export class LockService implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  /** The framework-free engine underneath (events, settings, the Redis connection). */
  readonly engine: LockEngine;
  private readonly logger = new Logger('RedisLock');
  private readonly runtime: LockRuntime;
  private detachMetrics: (() => void) | undefined;

  constructor(@Inject(MODULE_OPTIONS_TOKEN) private readonly options: RedisLockModuleOptions) {
    this.engine = new LockEngine({ ...options, logger: options.logger ?? this.logger });
    const logger = this.logger;
    this.runtime = {
      engine: this.engine,
      onLockLost: options.onLockLost ?? 'warn',
      conflictStatus: options.conflictStatus ?? 409,
      warn: (m) => logger.warn(m),
    };
    LockRegistry.register(this.runtime);
  }

  /** Starts the OpenTelemetry metrics when enabled and `@opentelemetry/api` is installed. */
  async onModuleInit(): Promise<void> {
    const metrics = this.options.metrics ?? true;
    if (metrics === false) return;
    this.detachMetrics = await attachOpenTelemetryMetrics(this.engine, metrics === true ? {} : metrics, this.logger);
  }

  /** Waits up to `waitTimeoutMs`, then rejects with `LockAcquireTimeoutError`. */
  acquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle> {
    return this.engine.acquire(keys, options);
  }

  /** One attempt, no waiting: the handle, or `null` when the lock is taken. */
  tryAcquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle | null> {
    return this.engine.tryAcquire(keys, options);
  }

  /** Acquires (write by default), runs `fn(handle)`, releases on success and on throw; returns what `fn` returns. */
  withLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.engine.withLock(keys, fn, options);
  }

  /** `withLock` in read mode: shared with other readers. */
  withReadLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions): Promise<T> {
    return this.engine.withLock(keys, fn, { ...options, mode: 'read' });
  }

  /** `withLock` in write mode: exclusive. */
  withWriteLock<T>(keys: string | readonly string[], fn: (lock: LockHandle) => T | Promise<T>, options?: ModeFixedOptions): Promise<T> {
    return this.engine.withLock(keys, fn, { ...options, mode: 'write' });
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
