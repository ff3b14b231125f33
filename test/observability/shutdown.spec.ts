import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Param, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { Resources, keysUnder, redisUrl, sleep, uniquePrefix } from '../support/redis.js';

@Controller('jobs')
class JobsController {
  @Post(':id')
  @WriteLocked('job:<id>', { waitTimeoutMs: 10_000 })
  async run(@Param('id') id: string): Promise<{ id: string }> {
    await sleep(300);
    return { id };
  }
}

describe('graceful shutdown under load', () => {
  const res = new Resources();
  afterEach(() => res.closeAll());

  it('lets holders finish, rejects waiters with 503, and leaves no lock key behind', async () => {
    const prefix = uniquePrefix('shutdown');
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: redisUrl(), keyPrefix: prefix, logger: { warn: () => undefined, error: () => undefined } })],
      controllers: [JobsController],
    }).compile();
    const app: INestApplication = moduleRef.createNestApplication();
    await app.init();
    await new Promise<void>((resolve) => app.getHttpServer().listen(0, '127.0.0.1', resolve));
    const admin = res.redis();

    // Two locks held ('a', 'b'), four requests waiting behind them.
    const server = app.getHttpServer();
    const calls = ['a', 'a', 'a', 'b', 'b', 'b'].map((id) => request(server).post(`/jobs/${id}`).then((r) => r.status));
    await sleep(100);
    const locks = app.get(LockService);
    for (const key of ['job:a', 'job:b']) {
      expect(await locks.inspect(key)).toMatchObject({ mode: 'write', waiting: 2 });
    }
    const closing = app.close();
    const statuses = await Promise.all(calls);
    await closing;
    // The two holders finished normally; the waiters were turned away at once instead of holding up shutdown.
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 503)).toHaveLength(4);
    expect(await keysUnder(admin, prefix)).toEqual([]);
  });
});
