import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LeaderExplorer } from '../nest/leader-explorer.js';
import { LockService } from '../nest/lock.service.js';
import { LOCK_STORE_FACTORY } from '../nest/lock-store.token.js';
import type { RedisLockModuleOptions } from '../nest/redis-lock-module-options.interface.js';
import { MODULE_OPTIONS_TOKEN } from '../nest/redis-lock.module-definition.js';
import { memoryLockStore } from './memory-lock-store.js';
import type { MemoryLockWorld } from './memory-lock-world.js';

/** Options of `RedisLockTestingModule.forRoot`: those of `RedisLockModule` without `redis`, plus where locks live. */
export interface RedisLockTestingModuleOptions extends Omit<RedisLockModuleOptions, 'redis'> {
  /**
   * The lock world shared with other engines and apps. Default `MemoryLockWorld.default` (one per process, like
   * one Redis); pass `new MemoryLockWorld()` to isolate a test.
   */
  readonly world?: MemoryLockWorld;
  /** Register the module globally. Default `false`. */
  readonly isGlobal?: boolean;
}

/**
 * `RedisLockModule` for unit tests: the same `LockService` (and so the same `@WriteLocked` / `@ReadLocked`
 * decorators, errors and events), with locks kept in memory instead of Redis. Every option of `RedisLockModule`
 * applies, except `redis`. Apps made on the same world (and key prefix) share their locks, as instances of an app
 * on one Redis do.
 *
 * @example
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedisLockTestingModule.forRoot({ isGlobal: true, waitTimeoutMs: 1_000 })],
 *   providers: [ArticlesService],
 * }).compile();
 * const articles = moduleRef.get(ArticlesService); // its @WriteLocked methods run under real locks
 * // ...
 * await moduleRef.close(); // releases what is still held
 */
@Module({})
export class RedisLockTestingModule {
  static forRoot(options: RedisLockTestingModuleOptions = {}): DynamicModule {
    const { world, isGlobal = false, ...moduleOptions } = options;
    // `redis` is never read: LockService runs its engine on the store factory below.
    const lockOptions: RedisLockModuleOptions = { ...moduleOptions, redis: undefined as never };
    return {
      module: RedisLockTestingModule,
      global: isGlobal,
      imports: [DiscoveryModule],
      providers: [
        { provide: MODULE_OPTIONS_TOKEN, useValue: lockOptions },
        { provide: LOCK_STORE_FACTORY, useValue: memoryLockStore(world) },
        LockService,
        LeaderExplorer,
      ],
      exports: [LockService, MODULE_OPTIONS_TOKEN],
    };
  }
}
