import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { LockAcquireTimeoutError, LockError, LockService } from 'nest-redis-locks';
import { AppModule } from '../src/app.module.js';
import { CounterService } from '../src/counter.service.js';
import { CounterStore } from '../src/counter.store.js';

// The app as users run it, in ESM, against the real Redis at REDIS_URL.
describe('nest-redis-locks in a Nest 12 ESM app', () => {
  const N = 50;
  let app: INestApplication;
  let base: string;

  before(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  after(async () => {
    await app?.close();
  });

  it('@Semaphore lets at most 2 exports run at once, and every one of them', async () => {
    const id = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await fetch(`${base}/counters/${id}/export`, { method: 'POST' });
        return { status: res.status, body: (await res.json()) as { running: number } };
      }),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(6).fill(201),
    );
    assert.equal(Math.max(...responses.map((r) => r.body.running)), 2);
    assert.equal(await app.get(LockService).inspectPermits(`counter-export:${id}`), null);
  });

  it('loads the lock board entry, nest-redis-locks/board', async () => {
    const board = await import('nest-redis-locks/board');
    assert.equal(typeof board.LockBoardModule.forRoot, 'function');
  });

  it(`${N} concurrent HTTP increments under @WriteLocked end at exactly ${N}`, async () => {
    const id = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: N }, async () => {
        const res = await fetch(`${base}/counters/${id}/increment`, { method: 'POST' });
        return { status: res.status, body: (await res.json()) as { value: number } };
      }),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(N).fill(201),
    );
    // Each request saw a different value: no two read-modify-writes overlapped.
    assert.equal(new Set(responses.map((r) => r.body.value)).size, N);
    const final = await fetch(`${base}/counters/${id}`);
    assert.deepEqual(await final.json(), { id, value: N });
  });

  it(`${N} concurrent LockService.withLock increments end at exactly ${N}`, async () => {
    const id = randomUUID();
    await Promise.all(Array.from({ length: N }, () => app.get(CounterService).increment(id)));
    assert.equal(await app.get(CounterStore).read(id), N);
  });

  it('reports the lock connections healthy through nest-redis-locks/health', async () => {
    const res = await fetch(`${base}/health`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { info: Record<string, { status: string }> };
    assert.equal(body.info['redis-lock']?.status, 'up');
  });

  it('throws the package error classes, caught with instanceof', async () => {
    const locks = app.get(LockService);
    const key = `held:${randomUUID()}`;
    const held = await locks.acquire(key);
    try {
      await assert.rejects(locks.acquire(key, { waitTimeoutMs: 50 }), (err: unknown) => {
        assert.ok(err instanceof LockAcquireTimeoutError);
        assert.ok(err instanceof LockError);
        assert.equal(err.key, key);
        return true;
      });
    } finally {
      await held.release();
    }
  });
});
