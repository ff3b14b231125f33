import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisLockModule } from 'nest-redis-locks';
import { RedisLockHealthIndicator } from 'nest-redis-locks/health';
import { CounterController } from './counter.controller';
import { CounterService } from './counter.service';
import { CounterStore } from './counter.store';
import { HealthController } from './health.controller';
import { AppRedis, REDIS_URL } from './redis.provider';

@Module({
  imports: [RedisLockModule.forRoot({ redis: REDIS_URL, keyPrefix: 'consumer-nest11-lock:' }), TerminusModule],
  controllers: [CounterController, HealthController],
  providers: [AppRedis, CounterStore, CounterService, RedisLockHealthIndicator],
})
export class AppModule {}
