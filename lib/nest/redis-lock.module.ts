import { Module } from '@nestjs/common';
import { LockService } from './lock.service.js';
import { ConfigurableRedisLockModule } from './redis-lock.module-definition.js';

/**
 * `RedisLockModule.forRoot({ redis: 'redis://…' })` or `forRootAsync({ imports, inject, useFactory })`,
 * both with `isGlobal`. Provides `LockService`; the lock decorators work once it is initialised.
 */
@Module({ providers: [LockService], exports: [LockService] })
export class RedisLockModule extends ConfigurableRedisLockModule {}
