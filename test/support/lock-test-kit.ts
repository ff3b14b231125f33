import { lockKeys } from '../../lib/redis/key-layout.js';
import { performance } from 'node:perf_hooks';
import { expect } from '@jest/globals';
import { Redis } from 'ioredis';
import type { LockEngine, LockEngineOptions } from '../../lib/locking/lock-engine.js';
import type { LockLogger } from '../../lib/locking/lock-events.js';
import { RedisLockStore } from '../../lib/redis/redis-lock-store.js';
import { startRedisServer } from '../../tools/redis-server.mjs';
import type { RedisServerProcess } from '../../tools/redis-server.mjs';
import { Resources, keysUnder, redisUrl, sleep } from './redis.js';

/** A logger that keeps what the engine reports instead of printing it (lost locks are expected in these tests). */
export class MemoryLogger implements LockLogger {
  readonly lines: string[] = [];
  warn(message: string): void {
    this.lines.push(`warn: ${message}`);
  }
  error(message: string): void {
    this.lines.push(`error: ${message}`);
  }
}

/**
 * `Resources` plus the checks every engine test ends with: `closeAll` closes what the test opened, then fails the
 * test if any Redis key is left under a prefix the test used, then stops the private redis-servers it started.
 */
export class LockTestKit extends Resources {
  private readonly prefixes: { readonly url: string; readonly prefix: string }[] = [];
  private readonly servers: RedisServerProcess[] = [];
  readonly logger = new MemoryLogger();

  /** An engine with a fresh key prefix (or `options.keyPrefix`), a quiet logger, closed by `closeAll`. */
  override engine(options: Partial<LockEngineOptions> = {}): LockEngine {
    const engine = super.engine({ logger: this.logger, ...options });
    const url = typeof options.redis === 'string' ? options.redis : redisUrl();
    if (!this.prefixes.some((p) => p.url === url && p.prefix === engine.settings.keyPrefix)) {
      this.prefixes.push({ url, prefix: engine.settings.keyPrefix });
    }
    return engine;
  }

  /** A second engine on the same Redis and key prefix as `engine`, like another process of the same app. */
  peer(engine: LockEngine, options: Partial<LockEngineOptions> = {}): LockEngine {
    return this.engine({ keyPrefix: engine.settings.keyPrefix, ...options });
  }

  /**
   * The script gateway on `engine`'s Redis and key prefix, for tests that send one store command at a time (e.g. a
   * command re-sent after a reconnect). Closed by `closeAll`.
   */
  store(engine: LockEngine, url = redisUrl()): RedisLockStore {
    const store = new RedisLockStore(url, {
      keyPrefix: engine.settings.keyPrefix,
      identity: { host: 'test-host', pid: 1, app: 'test' },
      subscriptionLingerMs: 0,
      onConnectionError: (err) => this.logger.warn(String(err)),
    });
    this.add(() => store.close());
    return store;
  }

  /** A private redis-server (so command counts and DBSIZE are not shared with parallel tests), stopped last. */
  async server(): Promise<RedisServerProcess> {
    const server = await startRedisServer();
    this.servers.push(server);
    return server;
  }

  override async closeAll(): Promise<void> {
    try {
      await super.closeAll();
      const leftovers: string[] = [];
      for (const { url, prefix } of this.prefixes.splice(0)) {
        const client = new Redis(url, { maxRetriesPerRequest: 2 });
        try {
          leftovers.push(...(await keysUnder(client, prefix)));
        } finally {
          client.disconnect();
        }
      }
      expect(leftovers).toEqual([]);
    } finally {
      for (const server of this.servers.splice(0)) await server.stop();
    }
  }
}

/** Lock keys, wait queues and channel of `key` under `prefix`, as Redis names them (see key-layout.ts). */
export function redisNames(prefix: string, key: string) {
  return lockKeys(prefix, key);
}

/** A promise plus its resolver, for gates between concurrent tasks. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Tracks whether a promise has settled, without consuming its rejection. */
export function track<T>(promise: Promise<T>): { readonly settled: boolean; readonly at: number | undefined; readonly promise: Promise<T> } {
  const state = { settled: false, at: undefined as number | undefined, promise };
  const done = () => {
    state.settled = true;
    state.at = performance.now();
  };
  promise.then(done, done);
  return state;
}

/** Polls `check` every 5 ms until it returns true; throws after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 3_000, what = 'condition'): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

/** Rejection reason of `promise` (fails if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** Resolves with the reason once `signal` aborts; rejects after `timeoutMs`. */
export function abortedWithin(signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${timeoutMs} ms`)), timeoutMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

export { keysUnder, sleep };
