import { Redis } from 'ioredis';
import Redlock from 'redlock';
import type { Settings } from 'redlock';
import type { Contender, ContenderSpec } from './contender.js';

/** Lock duration given to redlock, in milliseconds (it has no default; this library's default lease). */
const DURATION_MS = 30_000;

/** redlock@5.0.0-beta.2 on a single node: `acquire([key], duration)`, then `lock.release()`. */
class RedlockContender implements Contender {
  private readonly client: Redis;
  private readonly redlock: Redlock;

  constructor(
    url: string,
    private readonly prefix: string,
    settings: Partial<Settings>,
  ) {
    this.client = new Redis(url);
    this.redlock = new Redlock([this.client], settings);
    // Redlock emits "error" for every failed attempt on a node (including "resource locked"); without a listener
    // the EventEmitter would throw.
    this.redlock.on('error', () => undefined);
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const lock = await this.redlock.acquire([this.prefix + key], DURATION_MS);
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  async close(): Promise<void> {
    await this.redlock.quit();
  }
}

export const redlockSpec: ContenderSpec = {
  id: 'redlock',
  label: 'redlock (defaults)',
  kind: 'peer',
  settings: 'retryCount 10, retryDelay 200 ms, retryJitter 100 ms; duration 30000 ms',
  create: async (url, prefix) => new RedlockContender(url, prefix, {}),
};

export const redlockFastSpec: ContenderSpec = {
  id: 'redlock-fast',
  label: 'redlock (aggressive)',
  kind: 'peer',
  settings: 'retryCount 10000, retryDelay 1 ms, retryJitter 1 ms (0-2 ms between tries); duration 30000 ms',
  create: async (url, prefix) =>
    new RedlockContender(url, prefix, { retryCount: 10_000, retryDelay: 1, retryJitter: 1 }),
};
