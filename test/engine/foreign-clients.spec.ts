import { describe, expect, it } from '@jest/globals';
import { Redis as Valkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockEngine } from '../../lib/locking/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine-options.js';
import { redisUrl } from '../support/redis.js';

/**
 * Anything passed as `redis` that is none of the supported clients (ioredis, iovalkey, node-redis v5, Valkey GLIDE)
 * nor options must be refused at once, naming what was received: it was once taken for ioredis options, and the
 * engine connected to 127.0.0.1:6379 instead of the application's server. Supported clients of each library are
 * accepted (never connected here; test/drivers runs them).
 */
describe('redis: a client of no supported library', () => {
  const refusal = (redis: unknown): unknown => {
    try {
      new LockEngine({ redis } as LockEngineOptions).close().catch(() => undefined);
      return undefined;
    } catch (err) {
      return err;
    }
  };

  class RedisClient {
    connect(): void {}
    sendCommand(): void {}
  }
  class Commander {
    quit(): void {}
  }

  it.each([
    ['a client-like object of an unknown library', () => new RedisClient(), /a RedisClient/],
    ['an object with client methods', () => ({ connect() {}, quit() {} }), /an object with client methods/],
    ['an instance named like a client', () => new Commander(), /a Commander/],
  ])('%s is refused with a LockConfigError naming what was received', (_, make, named) => {
    const err = refusal(make());
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(/^invalid redis: received .* which is none of a redis:\/\/ URL/);
    expect((err as Error).message).toMatch(named);
    expect((err as Error).message).toMatch(/node-redis v5.*Valkey GLIDE/);
  });

  it.each([
    ['a node-redis client (createClient)', () => createClient({ url: redisUrl() })],
    ['a node-redis cluster (createCluster)', () => createCluster({ rootNodes: [{ url: redisUrl() }] })],
    ['an iovalkey client', () => new Valkey(redisUrl(), { lazyConnect: true })],
  ])('%s is accepted (its driver is chosen by its shape)', (_, make) => {
    const client = make();
    if ('on' in client) (client as { on(e: string, l: () => void): void }).on('error', () => undefined);
    expect(refusal(client)).toBeUndefined();
    if (client instanceof Valkey) client.disconnect();
  });

  it('ioredis options, also as an instance of an application config class, are still options', () => {
    class RedisSettings {
      readonly host = '127.0.0.1';
      readonly port = Number(new URL(redisUrl()).port);
    }
    for (const options of [{ host: '127.0.0.1', port: 6390, lazyConnect: true }, new RedisSettings()]) {
      expect(refusal(options)).toBeUndefined();
    }
  });
});
