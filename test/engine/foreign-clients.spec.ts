import { describe, expect, it } from '@jest/globals';
import { Redis as Valkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockEngine } from '../../lib/locking/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/lock-engine.js';
import { redisUrl } from '../support/redis.js';

/**
 * A client of another library passed as `redis` was taken for ioredis options, so the engine connected to
 * 127.0.0.1:6379 instead of the application's server. Until those clients have drivers, they are refused at once,
 * naming what was received. Real clients of each library, never connected.
 */
describe('redis: a client that is not an ioredis client', () => {
  const refusal = (redis: unknown): unknown => {
    try {
      new LockEngine({ redis } as LockEngineOptions).close().catch(() => undefined);
      return undefined;
    } catch (err) {
      return err;
    }
  };

  it.each([
    ['a node-redis client (createClient)', () => createClient({ url: redisUrl() }), /node-redis/],
    ['a node-redis cluster (createCluster)', () => createCluster({ rootNodes: [{ url: redisUrl() }] }), /\(/],
    ['an iovalkey client', () => new Valkey(redisUrl(), { lazyConnect: true }), /iovalkey/],
  ])('%s is refused with a LockConfigError naming what was received', (_, make, named) => {
    const client = make();
    const err = refusal(client);
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(/^invalid redis: received a \S+ .*not an ioredis client/);
    expect((err as Error).message).toMatch(named);
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
