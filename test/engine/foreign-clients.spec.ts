import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis as Valkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient6, createCluster as createCluster6 } from 'redis6';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { LockTestKit } from '../support/lock-test-kit.js';
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
    ['a node-redis 6 client (createClient)', () => createClient6({ url: redisUrl() })],
    ['a node-redis 6 cluster (createCluster)', () => createCluster6({ rootNodes: [{ url: redisUrl() }] })],
  ])('%s the application has connected is accepted (its driver is chosen by its shape)', async (_, make) => {
    const client = make();
    client.on('error', () => undefined);
    // `connect()` called is enough (the client is open, connecting); the test Redis is no Cluster, so a cluster's
    // connect fails afterwards.
    const connecting = client.connect().then(
      () => client.close(),
      () => undefined,
    );
    expect(refusal(client)).toBeUndefined();
    await connecting;
  });

  it('an iovalkey client is accepted (its driver is chosen by its shape)', () => {
    const client = new Valkey(redisUrl(), { lazyConnect: true });
    expect(refusal(client)).toBeUndefined();
    client.disconnect();
  });

  it.each([
    ['a node-redis client', () => createClient({ url: redisUrl() })],
    ['a node-redis cluster', () => createCluster({ rootNodes: [{ url: redisUrl() }] })],
    ['a node-redis 6 client', () => createClient6({ url: redisUrl() })],
  ])('%s never connected is refused: the application connects (and closes) its client', (_, make) => {
    const err = refusal(make());
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(/node-redis .*is not connected.*call `?await client\.connect\(\)`? before/);
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

  it.each<[string, () => unknown, RegExp]>([
    ['a Map', () => new Map([['host', 'r']]), /received a Map\b/],
    ['an object with get and set', () => ({ get() {}, set() {} }), /received an object with methods get, set\b/],
    [
      'a Promise of a client (a forgotten await)',
      () => new Promise(() => undefined),
      /received a Promise: did you forget `await`\?/,
    ],
    ['a number', () => 6379, /received a number \(6379\)/],
    ['a function', () => createClient, /received a function \(createClient\)/],
    [
      'a node-redis options object',
      () => ({ url: 'redis://r:6379' }),
      /received an object with no ioredis option.*url/,
    ],
  ])('%s is refused with a LockConfigError naming it, never taken for options', (_, make, named) => {
    const err = refusal(make());
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(/^invalid redis: /);
    expect((err as Error).message).toMatch(named);
  });

  it('ioredis options with function members (retryStrategy, reconnectOnError) are still options', () => {
    const options = {
      host: '127.0.0.1',
      port: 6390,
      lazyConnect: true,
      retryStrategy: () => null,
      reconnectOnError: () => false,
    };
    expect(refusal(options)).toBeUndefined();
    expect(refusal({})).toBeUndefined();
  });
});

describe('redis refused through RedisLockModule', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it.each<[string, () => unknown, RegExp]>([
    ['a Promise of a client', () => Promise.resolve(createClient()), /did you forget `await`\?/],
    ['a node-redis client never connected', () => createClient({ url: redisUrl() }), /is not connected/],
  ])('%s fails the start-up with a LockConfigError', async (_, make, named) => {
    const err = await kit.startApp({ imports: [RedisLockModule.forRoot({ redis: make() as never })] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as Error).message).toMatch(named);
  });
});
