import { afterEach, describe, expect, it } from '@jest/globals';
import { TerminusModule } from '@nestjs/terminus';
import { RedisLockHealthIndicator } from '../../lib/health/index.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { LockTestKit, uniquePrefix } from '../support/lock-test-kit.js';
import { until } from '../support/async.js';

describe('RedisLockHealthIndicator', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('is up while Redis answers on both connections and down when it does not', async () => {
    const server = await kit.server();
    const moduleRef = await kit.compile({
      imports: [
        TerminusModule,
        RedisLockModule.forRoot({
          redis: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 },
          keyPrefix: uniquePrefix('health'),
          logger: { warn: () => undefined, error: () => undefined },
        }),
      ],
      providers: [RedisLockHealthIndicator],
    });
    await moduleRef.init();
    const indicator = moduleRef.get(RedisLockHealthIndicator);

    const locks = moduleRef.get(LockService);
    const up = await indicator.isHealthy('locks');
    expect(up.locks).toMatchObject({ status: 'up', heldLocks: 0 });
    expect(up.locks).toMatchObject({
      holds: { lock: 0, semaphore: 0, leader: 0 },
      waiters: { lock: 0, semaphore: 0, leader: 0 },
    });
    const held = await locks.acquire('h');
    const permit = await locks.acquirePermit('hs', { limit: 1 });
    const waiter = locks.acquirePermit('hs', { limit: 1, waitTimeoutMs: 5_000 });
    await until(
      async () => (await indicator.isHealthy('locks')).locks.waiters?.semaphore === 1,
      3_000,
      'the permit waiter',
    );
    expect((await indicator.isHealthy('locks')).locks).toMatchObject({
      status: 'up',
      heldLocks: 2,
      holds: { lock: 1, semaphore: 1, leader: 0 },
      waiters: { lock: 0, semaphore: 1, leader: 0 },
    });
    await permit.release();
    await (await waiter).release();
    await held.release();

    await server.stop();
    const down = await indicator.isHealthy('locks', 300);
    expect(down.locks.status).toBe('down');
    // The reason is the failure's own message, not a placeholder.
    expect(typeof down.locks.message).toBe('string');
    expect(down.locks.message).toMatch(/\S/);
    expect(down.locks.message).not.toBe('Redis did not answer');
  });
});
