import { Module } from '@nestjs/common';
import type { ConfigurableModuleCls } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LeaderExplorer } from './leader-explorer.js';
import { LockService } from './lock.service.js';
import { SemaphoreStartupCheck } from './semaphore-startup-check.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { ConfigurableRedisLockModule } from './redis-lock.module-definition.js';

/**
 * Provides `LockService`; the lock decorators work once it is initialised, and `@Leader` methods campaign once the
 * application has started (`LeaderExplorer`). In quorum mode, an application with
 * `@Semaphore` methods does not start (`SemaphoreStartupCheck`).
 *
 * @example
 * RedisLockModule.forRoot({ redis: 'redis://127.0.0.1:6379', isGlobal: true })
 * RedisLockModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ redis: config.getOrThrow('REDIS_URL') }),
 * })
 */
@Module({
  imports: [DiscoveryModule],
  providers: [LockService, SemaphoreStartupCheck, LeaderExplorer],
  exports: [LockService],
})
export class RedisLockModule extends (ConfigurableRedisLockModule as ConfigurableModuleCls<
  RedisLockModuleOptions,
  'forRoot',
  'createRedisLockOptions',
  { isGlobal: boolean }
>) {}
