import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Param, Post } from '@nestjs/common';
import request from 'supertest';
import { Semaphore } from '../../lib/decorators/semaphore.decorator.js';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisProcess } from '../support/faults.js';
import { LockTestKit, sleep } from '../support/lock-test-kit.js';

/** Runs of each semaphore's methods: how many at once now, at most, and in all. */
const seen = new Map<string, { running: number; max: number; runs: number }>();
const of = (key: string) => seen.get(key) ?? seen.set(key, { running: 0, max: 0, runs: 0 }).get(key)!;

async function work(key: string, ms: number): Promise<number> {
  const s = of(key);
  s.running++;
  s.max = Math.max(s.max, s.running);
  s.runs++;
  try {
    await sleep(ms);
    return s.running;
  } finally {
    s.running--;
  }
}

@Injectable()
class Reports {
  /** A service method: at most 2 builds of one tenant's report at once. */
  @Semaphore('report:<tenant>', { limit: 2, waitTimeoutMs: 10_000 })
  build(tenant: string): Promise<number> {
    return work(`report:${tenant}`, 150);
  }
}

@Controller('exports')
class ExportsController {
  constructor(private readonly reports: Reports) {}

  @Post(':tenant')
  @Semaphore('export:<tenant>', { limit: 2, waitTimeoutMs: 300 })
  async export(@Param('tenant') tenant: string): Promise<{ tenant: string }> {
    await work(`export:${tenant}`, 800);
    return { tenant };
  }

  @Post(':tenant/report')
  async report(@Param('tenant') tenant: string): Promise<{ running: number }> {
    return { running: await this.reports.build(tenant) };
  }
}

describe('@Semaphore', () => {
  const kit = new LockTestKit();
  /** Servers of a test's own, stopped after the kit has checked that no key is left on them. */
  const servers: RedisProcess[] = [];
  afterEach(async () => {
    await kit.closeAll();
    for (const server of servers.splice(0)) await server.dispose();
    seen.clear();
  });

  it('lets `limit` requests in at once; one more waits up to waitTimeoutMs and is answered 409, naming the key', async () => {
    const t = await kit.app({ controllers: [ExportsController], providers: [Reports] });
    const first = [request(t.http).post('/exports/acme'), request(t.http).post('/exports/acme')].map((r) =>
      r.then((res) => res),
    );
    await sleep(200);
    const third = await request(t.http).post('/exports/acme');
    expect(third.status).toBe(409);
    expect(JSON.stringify(third.body)).toContain('export:acme');
    // Another tenant is another semaphore.
    expect((await request(t.http).post('/exports/globex')).status).toBe(201);
    expect((await Promise.all(first)).map((r) => r.status)).toEqual([201, 201]);
    expect(of('export:acme')).toEqual({ running: 0, max: 2, runs: 2 });
    // The permits were given back when the responses completed.
    expect(await t.locks.inspectPermits('export:acme')).toBeNull();
  });

  it('on a service method, bounds concurrent calls across two app instances sharing Redis', async () => {
    const a = await kit.app({ controllers: [ExportsController], providers: [Reports] });
    const b = await kit.app({ controllers: [ExportsController], providers: [Reports] }, { keyPrefix: a.prefix });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => request((i % 2 ? a : b).http).post('/exports/acme/report')),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(of('report:acme')).toEqual({ running: 0, max: 2, runs: 8 });
  });

  it('answers 503 when Redis does not answer (paused), without running the handler', async () => {
    const server = await RedisProcess.start();
    servers.push(server);
    const t = await kit.app(
      { controllers: [ExportsController], providers: [Reports] },
      { redis: server.url, commandTimeoutMs: 300 },
    );
    server.pause();
    try {
      const r = await request(t.http).post('/exports/acme');
      expect(r.status).toBe(503);
      expect(of('export:acme').runs).toBe(0);
    } finally {
      server.resume();
    }
  });

  it('refuses a bad limit or several keys at start-up, naming the method and the option', () => {
    const define =
      (limit: unknown, key: string | string[] = 'k:<id>') =>
      () => {
        class Bad {
          @Semaphore(key, { limit } as { limit: number })
          run(id: string) {
            return id;
          }
        }
        return Bad;
      };
    for (const limit of [0, 1.5, -1, '2', undefined, 100_001]) {
      expect(define(limit)).toThrow(LockConfigError);
      expect(define(limit)).toThrow(/Bad\.run: invalid limit/);
    }
    expect(define(2, ['a:<id>', 'b:<id>'])).toThrow(/one key/);
    expect(define(2)).not.toThrow();
  });

  it('LockService: withPermit and the stored limit as a rolling deploy sees it', async () => {
    const t = await kit.app({ controllers: [] });
    const locks: LockService = t.locks;
    const one = await locks.acquirePermit('deploy', { limit: 1 });
    // A newer version names limit 3: the stored limit (1) applies until setPermitLimit.
    expect(await locks.tryAcquirePermit('deploy', { limit: 3 })).toBeNull();
    expect(await locks.setPermitLimit('deploy', 3)).toBe(1);
    const more = await locks.tryAcquirePermit('deploy', { limit: 3 });
    expect(more?.limit).toBe(3);
    expect((await locks.inspectPermits('deploy'))?.used).toBe(2);
    await more?.release();
    await one.release();
    expect(await locks.withPermit('deploy', (p) => p.limit, { limit: 3 })).toBe(3);
    // Kept a day after setPermitLimit, idle or not, until removed by hand.
    expect((await locks.inspectPermits('deploy'))?.limit).toBe(3);
    await locks.forceReleasePermits('deploy');
    expect(await kit.redis().del(`${t.prefix}{deploy}`)).toBe(1);
  });
});
