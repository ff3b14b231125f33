import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import type { LockOptions } from 'redis-semaphore';
import type { Contender, ContenderSpec } from './contender.js';

/** redis-semaphore `Mutex`: a new Mutex per acquisition (its documented use), `acquire()`, then `release()`. */
class SemaphoreContender implements Contender {
  private readonly client: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly options: LockOptions | undefined,
  ) {
    this.client = new Redis(url);
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const mutex = new Mutex(this.client, this.prefix + key, this.options);
    await mutex.acquire();
    try {
      return await fn();
    } finally {
      await mutex.release();
    }
  }

  async close(): Promise<void> {
    await this.client.quit();
  }
}

export const semaphoreSpec: ContenderSpec = {
  id: 'semaphore',
  label: 'redis-semaphore Mutex (defaults)',
  kind: 'peer',
  settings: 'lockTimeout 10 s, refresh every 8 s, retryInterval 10 ms, acquireTimeout 10 s',
  create: async (url, prefix) => new SemaphoreContender(url, prefix, undefined),
};

export const semaphoreFastSpec: ContenderSpec = {
  id: 'semaphore-fast',
  label: 'redis-semaphore Mutex (aggressive)',
  kind: 'peer',
  settings: 'retryInterval 1 ms; otherwise defaults',
  create: async (url, prefix) => new SemaphoreContender(url, prefix, { retryInterval: 1 }),
};
