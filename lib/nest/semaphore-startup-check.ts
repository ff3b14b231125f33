import { Inject, Injectable, Optional } from '@nestjs/common';
import type { OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockConfigError } from '../errors/lock-config.error.js';
import { QUORUM_HAS_NO_SEMAPHORES } from '../locking/engine/engine-store.js';
import type { LockStoreFactory } from '../store/lock-store.js';
import { LOCK_STORE_FACTORY } from './lock-store.token.js';
import { applicationClasses, decoratedMethods } from './decorated-methods.js';
import { LOCKED_METADATA } from './locked-method.js';
import type { LockedMethodSpec } from './locked-method.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { MODULE_OPTIONS_TOKEN } from './redis-lock.module-definition.js';

/**
 * Refuses to start an application in quorum mode (`redis: [a, b, c]`) whose providers or controllers have
 * `@Semaphore` methods: they could never run (quorum mode has no semaphores, see `QUORUM_HAS_NO_SEMAPHORES`), so
 * the mistake is reported at start-up, naming them, rather than by every call. Methods of classes Nest does not
 * manage are still refused at call time.
 */
@Injectable()
export class SemaphoreStartupCheck implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Inject(MODULE_OPTIONS_TOKEN) private readonly options: RedisLockModuleOptions,
    @Optional() @Inject(LOCK_STORE_FACTORY) private readonly store?: LockStoreFactory,
  ) {}

  /** @throws {LockConfigError} naming `redis` and the `@Semaphore` methods, in quorum mode. */
  onModuleInit(): void {
    if (this.store || !Array.isArray(this.options.redis)) return;
    const methods = this.semaphoreMethods();
    if (methods.length === 0) return;
    throw new LockConfigError(`@Semaphore on ${methods.join(', ')}: ${QUORUM_HAS_NO_SEMAPHORES}`, 'redis');
  }

  /** `Class.method` of every `@Semaphore` method of the application's providers and controllers. */
  private semaphoreMethods(): string[] {
    const wrappers = applicationClasses(this.discovery, true);
    const found = decoratedMethods<LockedMethodSpec>(wrappers, this.scanner, LOCKED_METADATA);
    return [...new Set(found.filter((m) => m.spec.permitLimit !== undefined).map((m) => m.spec.method))].sort();
  }
}
