import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisLockModule } from 'nest-redis-locks';
import { RedisLockHealthIndicator } from 'nest-redis-locks/health';
import { CounterController } from './counter.controller.js';
import { CounterService } from './counter.service.js';
import { CounterStore } from './counter.store.js';
import { HealthController } from './health.controller.js';
import { AppRedis } from './redis.provider.js';

@Module({ providers: [AppRedis], exports: [AppRedis] })
export class AppRedisModule {}

@Module({
  imports: [
    // The lock module is given the application's own ioredis 6 client (which it will not close).
    RedisLockModule.forRootAsync({
      imports: [AppRedisModule],
      inject: [AppRedis],
      useFactory: (redis: AppRedis) => ({ redis: redis.client, keyPrefix: 'consumer-nest12-lock:' }),
    }),
    AppRedisModule,
    TerminusModule,
  ],
  controllers: [CounterController, HealthController],
  providers: [CounterStore, CounterService, RedisLockHealthIndicator],
})
export class AppModule {}
