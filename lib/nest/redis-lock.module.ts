import { Module } from '@nestjs/common';
import type { ConfigurableModuleCls } from '@nestjs/common';
import { LockService } from './lock.service.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';
import { ConfigurableRedisLockModule } from './redis-lock.module-definition.js';

/**
 * Provides `LockService`; the lock decorators work once it is initialised.
 *
 * @example
 * RedisLockModule.forRoot({ redis: 'redis://127.0.0.1:6379', isGlobal: true })
 * RedisLockModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ redis: config.getOrThrow('REDIS_URL') }),
 * })
 */
@Module({ providers: [LockService], exports: [LockService] })
export class RedisLockModule extends (ConfigurableRedisLockModule as ConfigurableModuleCls<
  RedisLockModuleOptions,
  'forRoot',
  'createRedisLockOptions',
  { isGlobal: boolean }
>) {}
