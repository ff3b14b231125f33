import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { LockEngine } from '../../lib/locking/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/lock-engine.js';

/** The Redis the test command started (or REDIS_URL). */
export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: run the tests with `npm test`, which starts a redis-server');
  return url;
}

/** A key prefix no other test uses. */
export function uniquePrefix(name = 't'): string {
  return `test:${name}:${randomBytes(4).toString('hex')}:`;
}

/** Tracks what a test opens so `closeAll` can close it. */
export class Resources {
  private readonly closers: (() => Promise<unknown>)[] = [];

  engine(options: Partial<LockEngineOptions> = {}): LockEngine {
    const engine = new LockEngine({ redis: redisUrl(), keyPrefix: uniquePrefix(), ...options });
    this.closers.push(() => engine.close());
    return engine;
  }

  redis(url = redisUrl()): Redis {
    const client = new Redis(url);
    this.closers.push(() => client.quit().catch(() => client.disconnect()));
    return client;
  }

  add(closer: () => Promise<unknown>): void {
    this.closers.push(closer);
  }

  async closeAll(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) await close();
  }
}

/** Every Redis key under `prefix`. */
export async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found.sort();
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
