import { Injectable, OnApplicationShutdown } from '@nestjs/common';
// The named export: ioredis 5 and 6 both have it, and it type-checks under every moduleResolution.
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The application's own Redis client, for the counters (the lock library opens its own connections). */
@Injectable()
export class AppRedis implements OnApplicationShutdown {
  readonly client = new Redis(REDIS_URL);

  async onApplicationShutdown(): Promise<void> {
    await this.client.quit();
  }
}
