import { Inject, Logger, Module } from '@nestjs/common';
import type { DynamicModule, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { ScheduleModule } from '@nestjs/schedule';
import { RedisLockModule } from '../lib/index.js';
import { ArticlesController } from './articles/articles.controller.js';
import { ARTICLES_REDIS } from './articles/articles.redis.js';
import { ArticlesService } from './articles/articles.service.js';
import { DigestJob } from './jobs/digest.job.js';
import { ChangesRelay } from './jobs/changes-relay.js';
import { lockBoardFromEnv } from './locks/lock-board.js';
import { LocksController } from './locks/locks.controller.js';

/** Closes the articles' Redis client on shutdown. */
class ArticlesRedisCloser implements OnApplicationShutdown {
  constructor(@Inject(ARTICLES_REDIS) private readonly redis: Redis) {}
  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}

/**
 * The deadlock alarm's thresholds from LOCK_HOLD_WARNING_MS and LOCK_WAIT_WARNING_MS, in milliseconds (unset: the
 * library's defaults, 60 s and 5 s). The relay's leadership is never reported: it lasts, and its standbys wait, by design.
 */
function alarmThresholdsFromEnv(env: NodeJS.ProcessEnv = process.env): {
  holdWarningMs?: number;
  waitWarningMs?: number;
} {
  const ms = (value: string | undefined) => (value ? Number(value) : undefined);
  return { holdWarningMs: ms(env.LOCK_HOLD_WARNING_MS), waitWarningMs: ms(env.LOCK_WAIT_WARNING_MS) };
}

/** The articles sample application, against the Redis at `redisUrl`. */
@Module({})
export class AppModule {
  static forRedis(redisUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        RedisLockModule.forRoot({ redis: redisUrl, isGlobal: true, ...alarmThresholdsFromEnv() }),
        ScheduleModule.forRoot(),
        ...lockBoardFromEnv(),
      ],
      controllers: [ArticlesController, LocksController],
      providers: [
        {
          provide: ARTICLES_REDIS,
          useFactory: () => {
            const redis = new Redis(redisUrl);
            const logger = new Logger('ArticlesRedis');
            redis.on('error', (err: Error) => logger.warn(`Redis: ${err.message}`));
            return redis;
          },
        },
        ArticlesRedisCloser,
        ArticlesService,
        DigestJob,
        ChangesRelay,
      ],
    };
  }
}
