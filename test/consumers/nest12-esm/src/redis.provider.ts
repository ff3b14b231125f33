import { Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
// Under nodenext, `import Redis from 'ioredis'` gives TS2351 ("This expression is not constructable"): ioredis
// is CommonJS, so its default import is the whole module object. The named export is the right form.
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The application's own Redis client: the counters use it, and the lock module is given it too. */
@Injectable()
export class AppRedis implements OnApplicationShutdown {
  readonly client = new Redis(REDIS_URL);

  async onApplicationShutdown(): Promise<void> {
    // The lock library never closes a client it was given; closing it is the application's job.
    await this.client.quit();
  }
}
