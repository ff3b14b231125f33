import { afterEach, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { TerminusModule } from '@nestjs/terminus';
import { RedisLockHealthIndicator } from '../../lib/health/index.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { startRedisServer } from '../../tools/redis-server.mjs';
import { uniquePrefix } from '../support/redis.js';

describe('RedisLockHealthIndicator', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('is up while Redis answers on both connections and down when it does not', async () => {
    const server = await startRedisServer();
    closers.push(() => server.stop());
    const moduleRef = await Test.createTestingModule({
      imports: [
        TerminusModule,
        RedisLockModule.forRoot({
          redis: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 },
          keyPrefix: uniquePrefix('health'),
          logger: { warn: () => undefined, error: () => undefined },
        }),
      ],
      providers: [RedisLockHealthIndicator],
    }).compile();
    await moduleRef.init();
    closers.push(() => moduleRef.close());
    const indicator = moduleRef.get(RedisLockHealthIndicator);

    const up = await indicator.isHealthy('locks');
    expect(up.locks.status).toBe('up');
    expect(up.locks).toMatchObject({ heldLocks: 0 });

    await server.stop();
    const down = await indicator.isHealthy('locks', 300);
    expect(down.locks.status).toBe('down');
    expect(String(down.locks.message)).not.toHaveLength(0);
  });
});
