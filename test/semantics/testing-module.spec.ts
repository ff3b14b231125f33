import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Module, Param, Post } from '@nestjs/common';
import request from 'supertest';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { MemoryLockWorld, RedisLockTestingModule } from '../../lib/testing/index.js';
import { LockTestKit, deferred, sleep, until } from '../support/lock-test-kit.js';

const N = 25;

/** A remote counter: a read, then a write after an await, as a GET then SET on another server would be. */
class CounterStore {
  private readonly values = new Map<string, number>();

  async get(id: string): Promise<number> {
    await sleep(1);
    return this.values.get(id) ?? 0;
  }

  async set(id: string, value: number): Promise<void> {
    await sleep(1);
    this.values.set(id, value);
  }

  async increment(id: string): Promise<number> {
    const value = (await this.get(id)) + 1;
    await this.set(id, value);
    return value;
  }
}

@Injectable()
class CounterService {
  constructor(
    private readonly store: CounterStore,
    private readonly locks: LockService,
  ) {}

  @WriteLocked('counter:<id>')
  increment(id: string): Promise<number> {
    return this.store.increment(id);
  }

  incrementWithLock(id: string): Promise<number> {
    return this.locks.withLock(`counter:${id}`, () => this.store.increment(id));
  }

  incrementUnlocked(id: string): Promise<number> {
    return this.store.increment(id);
  }

  @WriteLocked('counter:<id>')
  async holdFor(id: string, until: Promise<void>): Promise<string | undefined> {
    await until;
    return this.locks.current()?.key ?? `counter:${id} ran unlocked`;
  }

  value(id: string): Promise<number> {
    return this.store.get(id);
  }
}

@Controller('counters')
class CounterController {
  constructor(private readonly store: CounterStore) {}

  @Post(':id')
  @WriteLocked('counter:<id>', { waitTimeoutMs: 5_000 })
  async bump(@Param('id') id: string): Promise<{ value: number }> {
    return { value: await this.store.increment(id) };
  }

  @Post(':id/quick')
  @WriteLocked('counter:<id>', { waitTimeoutMs: 50 })
  async quick(@Param('id') id: string): Promise<{ value: number }> {
    return { value: await this.store.increment(id) };
  }
}

/** A plain job with a decorated method, outside any module. */
class PlainJob {
  runs = 0;

  @WriteLocked('job:<id>')
  async run(id: string): Promise<string> {
    this.runs++;
    return id;
  }
}

function counterApp(testing = RedisLockTestingModule.forRoot()) {
  return {
    imports: [testing],
    controllers: [CounterController],
    providers: [CounterService, { provide: CounterStore, useValue: new CounterStore() }],
  };
}

describe('RedisLockTestingModule', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('without any lock module, a decorated method rejects (module not initialised) and never runs', async () => {
    const job = new PlainJob();
    await expect(job.run('1')).rejects.toBeInstanceOf(LockConfigError);
    const app = await kit.startApp({ providers: [PlainJob] });
    await expect(app.get(PlainJob).run('1')).rejects.toThrow(/PlainJob\.run.*not initialised/);
    expect(job.runs + app.get(PlainJob).runs).toBe(0);
  });

  it(`with it, ${N} concurrent read-modify-writes end at ${N}: decorated service method, withLock, HTTP handler`, async () => {
    const app = await kit.startApp(counterApp());
    const counters = app.get(CounterService);
    await Promise.all(Array.from({ length: N }, () => counters.increment('1')));
    expect(await counters.value('1')).toBe(N);
    await Promise.all(Array.from({ length: N }, () => counters.incrementWithLock('2')));
    expect(await counters.value('2')).toBe(N);
    const responses = await Promise.all(
      Array.from({ length: N }, () => request(app.getHttpServer()).post('/counters/3')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(N).fill(201));
    expect(responses.map((r) => (r.body as { value: number }).value).sort((x, y) => x - y)).toEqual(
      Array.from({ length: N }, (_, i) => i + 1),
    );
    // The same calls without a lock lose updates: the test above could fail.
    await Promise.all(Array.from({ length: N }, () => counters.incrementUnlocked('4')));
    expect(await counters.value('4')).toBeLessThan(N);
  });

  it('decorated methods hold a real lock: inspect sees it, a busy handler answers 409, and nothing is left after close', async () => {
    const app = await kit.startApp(counterApp());
    const counters = app.get(CounterService);
    const locks = app.get(LockService);
    const release = deferred();
    const holding = counters.holdFor('9', release.promise);
    await until(
      async () => (await locks.inspect('counter:9'))?.mode === 'write',
      2_000,
      'the decorated method to hold its lock',
    );
    const busy = await request(app.getHttpServer()).post('/counters/9/quick');
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ key: 'counter:9' });
    release.resolve();
    expect(await holding).toBe('counter:9');
    expect((await request(app.getHttpServer()).post('/counters/9/quick')).status).toBe(201);
    await kit.closeAll();
    expect(MemoryLockWorld.default.keys()).toEqual([]);
  });

  it('apps on one world share their locks, as instances on one Redis do; another world is another set of locks', async () => {
    const world = new MemoryLockWorld();
    const first = await kit.startApp({ imports: [RedisLockTestingModule.forRoot({ world })] });
    const second = await kit.startApp({ imports: [RedisLockTestingModule.forRoot({ world })] });
    const elsewhere = await kit.startApp({
      imports: [RedisLockTestingModule.forRoot({ world: new MemoryLockWorld() })],
    });
    const held = await first.get(LockService).acquire('report');
    expect(await second.get(LockService).tryAcquire('report')).toBeNull();
    expect((await second.get(LockService).inspect('report'))?.holders).toHaveLength(1);
    const other = await elsewhere.get(LockService).tryAcquire('report');
    expect(other).not.toBeNull();
    expect(world.keys()).toEqual(['report']);
    await held.release();
    await other!.release();
    expect(world.keys()).toEqual([]);
  });

  it('isGlobal: feature modules inject LockService without importing the testing module; options apply', async () => {
    @Injectable()
    class Reports {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [Reports], exports: [Reports] })
    class ReportsModule {}
    const app = await kit.startApp({
      imports: [
        RedisLockTestingModule.forRoot({
          isGlobal: true,
          keyPrefix: 'reports:',
          waitTimeoutMs: 30,
          world: new MemoryLockWorld(),
        }),
        ReportsModule,
      ],
    });
    const { locks } = app.get(Reports);
    const held = await locks.acquire('weekly');
    await expect(locks.acquire('weekly')).rejects.toMatchObject({ name: 'LockAcquireTimeoutError', waitTimeoutMs: 30 });
    await held.release();
  });
});
