import { Inject, Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import type { Redis } from 'ioredis';
import { ScheduledLock } from '../../lib/index.js';
import { ARTICLES_REDIS } from '../articles/articles.redis.js';

/**
 * A scheduled job that must run once per fire however many instances run: every 10 seconds one instance (whichever
 * takes the fire's key `job:articles.digest@<tick>` first) counts the articles' likes into `digest:<fire>` (with the
 * pid that ran it) and counts its runs of that fire in `digest:<fire>:runs` (always 1); the others skip that fire (a
 * `skipped` event, nothing logged).
 */
@Injectable()
export class DigestJob {
  private readonly logger = new Logger(DigestJob.name);

  constructor(@Inject(ARTICLES_REDIS) private readonly redis: Redis) {}

  @Cron('*/10 * * * * *')
  @ScheduledLock('articles.digest')
  async run(): Promise<void> {
    // The fire's tick, in seconds: a cron fire runs at or after it.
    const fire = Math.floor(Date.now() / 10_000) * 10;
    const keys: string[] = [];
    for (let cursor = '0'; ;) {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', 'articles:*:likes', 'COUNT', 100);
      keys.push(...found);
      cursor = next;
      if (cursor === '0') break;
    }
    const likes = keys.length > 0 ? (await this.redis.mget(keys)).reduce((n, v) => n + Number(v ?? 0), 0) : 0;
    const digest = JSON.stringify({ likes, articles: keys.length, by: process.pid });
    await this.redis
      .multi()
      .set(`digest:${fire}`, digest, 'EX', 600)
      .incr(`digest:${fire}:runs`)
      .expire(`digest:${fire}:runs`, 600)
      .exec();
    this.logger.log(`digest of fire ${fire}: ${likes} likes over ${keys.length} articles`);
  }
}
