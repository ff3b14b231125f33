import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { LockAcquireTimeoutError, LockError, LockService } from 'nest-redis-locks';
import { AppModule } from '../src/app.module';
import { CounterService } from '../src/counter.service';
import { CounterStore } from '../src/counter.store';

// The app as users run it, under ts-jest (CommonJS), against the real Redis at REDIS_URL.
describe('nest-redis-locks in a Nest 11 CommonJS app', () => {
  const N = 50;
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
  });

  it(`${N} concurrent HTTP increments under @WriteLocked end at exactly ${N}`, async () => {
    const id = randomUUID();
    const server = app.getHttpServer();
    const responses = await Promise.all(
      Array.from({ length: N }, () => request(server).post(`/counters/${id}/increment`)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(N).fill(201));
    // Each request saw a different value: no two read-modify-writes overlapped.
    expect(new Set(responses.map((r) => r.body.value)).size).toBe(N);
    const final = await request(server).get(`/counters/${id}`);
    expect(final.body).toEqual({ id, value: N });
  });

  it(`${N} concurrent LockService.withLock increments end at exactly ${N}`, async () => {
    const id = randomUUID();
    const counters = app.get(CounterService);
    await Promise.all(Array.from({ length: N }, () => counters.increment(id)));
    expect(await app.get(CounterStore).read(id)).toBe(N);
  });

  it('@Semaphore lets at most 2 exports run at once, and every one of them', async () => {
    const id = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => request(app.getHttpServer()).post(`/counters/${id}/export`)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect(Math.max(...responses.map((r) => r.body.running))).toBe(2);
    expect(await app.get(LockService).inspectPermits(`counter-export:${id}`)).toBeNull();
  });

  it('loads the lock board entry, nest-redis-locks/board', async () => {
    const board = await import('nest-redis-locks/board');
    expect(typeof board.LockBoardModule.forRoot).toBe('function');
  });

  it('reports the lock connections healthy through nest-redis-locks/health', async () => {
    const res = await request(app.getHttpServer()).get('/health');
    expect(res.status).toBe(200);
    expect(res.body.info['redis-lock'].status).toBe('up');
  });

  it('throws the package error classes, caught with instanceof', async () => {
    const locks = app.get(LockService);
    const key = `held:${randomUUID()}`;
    const held = await locks.acquire(key);
    try {
      const err = await locks.acquire(key, { waitTimeoutMs: 50 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockAcquireTimeoutError);
      expect(err).toBeInstanceOf(LockError);
      expect((err as LockAcquireTimeoutError).key).toBe(key);
    } finally {
      await held.release();
    }
  });
});
