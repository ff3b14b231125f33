import { afterEach, describe, expect, it } from '@jest/globals';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { LOCK_METRICS } from '../../lib/observability/lock-metrics.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import { LockTestKit, redisUrl, sleep, uniquePrefix, until } from '../support/lock-test-kit.js';
import { deferred } from '../support/async.js';

describe('OpenTelemetry metrics', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  async function setup(keyAttribute: boolean) {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    kit.add(() => provider.shutdown());
    const keyPrefix = uniquePrefix('metrics');
    kit.watchPrefix(redisUrl(), keyPrefix);
    const moduleRef = await kit.compile({
      imports: [
        RedisLockModule.forRoot({
          redis: redisUrl(),
          keyPrefix,
          logger: { warn: () => undefined, error: () => undefined },
          metrics: { meter: provider.getMeter('test'), keyAttribute },
        }),
      ],
    });
    await moduleRef.init();
    const collect = async () => {
      await reader.forceFlush();
      const metrics =
        exporter
          .getMetrics()
          .at(-1)
          ?.scopeMetrics.flatMap((s) => s.metrics) ?? [];
      return new Map(metrics.map((m) => [m.descriptor.name, m.dataPoints]));
    };
    return { locks: moduleRef.get(LockService), collect };
  }

  it('records wait and hold histograms and counters for contention, timeouts and lost locks, by mode', async () => {
    const { locks, collect } = await setup(false);
    const a = await locks.acquire('m');
    await expect(locks.acquire('m', { waitTimeoutMs: 40 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    const waiter = locks.acquire('m', { mode: 'read', waitTimeoutMs: 2_000 });
    await until(async () => (await locks.inspect('m'))?.waitingReaders === 1, 1_000, 'the reader to wait');
    await sleep(50); // the reader's wait time, recorded below
    await a.release();
    const r = await waiter;
    await r.release();
    const lost = await locks.acquire('gone');
    await locks.forceRelease('gone');
    expect(lost.signal.aborted).toBe(true);

    const m = await collect();
    const sum = (name: string, mode?: string) =>
      (m.get(name) ?? [])
        .filter((p) => !mode || p.attributes['lock.mode'] === mode)
        .reduce((acc, p) => acc + (typeof p.value === 'number' ? p.value : (p.value as { count: number }).count), 0);
    expect(sum(LOCK_METRICS.acquired)).toBe(3);
    expect(sum(LOCK_METRICS.contended)).toBe(2);
    expect(sum(LOCK_METRICS.timeouts, 'write')).toBe(1);
    expect(sum(LOCK_METRICS.lost, 'write')).toBe(1);
    expect(sum(LOCK_METRICS.waitDuration, 'read')).toBe(1);
    expect(sum(LOCK_METRICS.holdDuration)).toBe(2);
    const readWait = m.get(LOCK_METRICS.waitDuration)!.find((p) => p.attributes['lock.mode'] === 'read')!.value as {
      sum: number;
    };
    expect(readWait.sum).toBeGreaterThanOrEqual(40);
    expect(m.get(LOCK_METRICS.acquired)!.every((p) => !('lock.key' in p.attributes))).toBe(true);
  });

  it("tells semaphores from locks: attribute lock.kind is 'semaphore' for permits, 'lock' for locks", async () => {
    const { locks, collect } = await setup(false);
    await locks.withLock('l', () => undefined);
    const held = await locks.acquirePermit('s', { limit: 1 });
    await expect(locks.acquirePermit('s', { limit: 1, waitTimeoutMs: 40 })).rejects.toBeInstanceOf(
      LockAcquireTimeoutError,
    );
    await held.release();
    const taken = await locks.acquirePermit('s', { limit: 1 });
    await locks.forceReleasePermits('s');
    expect(taken.signal.aborted).toBe(true);

    const m = await collect();
    const sum = (name: string, kind: string) =>
      (m.get(name) ?? [])
        .filter((p) => p.attributes['lock.kind'] === kind)
        .reduce((acc, p) => acc + (typeof p.value === 'number' ? p.value : (p.value as { count: number }).count), 0);
    expect([sum(LOCK_METRICS.acquired, 'lock'), sum(LOCK_METRICS.holdDuration, 'lock')]).toEqual([1, 1]);
    expect(sum(LOCK_METRICS.acquired, 'semaphore')).toBe(2);
    expect(sum(LOCK_METRICS.waitDuration, 'semaphore')).toBe(2);
    expect(sum(LOCK_METRICS.contended, 'semaphore')).toBe(1);
    expect(sum(LOCK_METRICS.timeouts, 'semaphore')).toBe(1);
    expect(sum(LOCK_METRICS.holdDuration, 'semaphore')).toBe(1);
    expect(sum(LOCK_METRICS.lost, 'semaphore')).toBe(1);
    // Every data point says its kind (a permit's mode is 'write', which alone cannot tell it from a write lock).
    // The gauges (lock.holds, lock.waiters) also report a third kind, 'leader' (tested below).
    const gauges = new Set<string>([LOCK_METRICS.holds, LOCK_METRICS.waiters]);
    for (const [name, points] of m)
      for (const p of points)
        expect(gauges.has(name) ? ['lock', 'semaphore', 'leader'] : ['lock', 'semaphore']).toContain(
          p.attributes['lock.kind'],
        );
  });

  it('gauges lock.holds and lock.waiters: this process now, per kind (lock, semaphore, leader), zeros included', async () => {
    const { locks, collect } = await setup(false);
    const gauge = async (name: string) => {
      const points = (await collect()).get(name) ?? [];
      return Object.fromEntries(points.map((p) => [p.attributes['lock.kind'], p.value]));
    };
    expect(await gauge(LOCK_METRICS.holds)).toEqual({ lock: 0, semaphore: 0, leader: 0 });
    expect(await gauge(LOCK_METRICS.waiters)).toEqual({ lock: 0, semaphore: 0, leader: 0 });

    // Two locks (one re-entered: one hold), a permit, and a leadership; a waiter of each kind.
    const a = await locks.acquire('g:a');
    const inner = deferred();
    const reentered = locks.withLock('g:b', () => locks.withLock('g:b', () => inner.promise));
    const permit = await locks.acquirePermit('g:s', { limit: 1 });
    const elected = deferred();
    const lead = (term: { signal: AbortSignal }) => {
      elected.resolve();
      return new Promise<void>((resolve) => term.signal.addEventListener('abort', () => resolve()));
    };
    const stopLeader = locks.campaign('g', lead);
    await elected.promise;
    const stopStandby = locks.campaign('g', lead);
    const lockWaiter = locks.acquire('g:a', { waitTimeoutMs: 10_000 }).catch((e: unknown) => e);
    const permitWaiter = locks.acquirePermit('g:s', { limit: 1, waitTimeoutMs: 10_000 }).catch((e: unknown) => e);
    await until(
      async () => {
        const w = await gauge(LOCK_METRICS.waiters);
        return w.lock === 1 && w.semaphore === 1 && w.leader === 1;
      },
      5_000,
      'one waiter of each kind',
    );
    expect(await gauge(LOCK_METRICS.holds)).toEqual({ lock: 2, semaphore: 1, leader: 1 });

    await a.release();
    await ((await lockWaiter) as { release(): Promise<unknown> }).release();
    await permit.release();
    await ((await permitWaiter) as { release(): Promise<unknown> }).release();
    inner.resolve();
    await reentered;
    await Promise.all([stopStandby(), stopLeader()]);
    expect(await gauge(LOCK_METRICS.holds)).toEqual({ lock: 0, semaphore: 0, leader: 0 });
    expect(await gauge(LOCK_METRICS.waiters)).toEqual({ lock: 0, semaphore: 0, leader: 0 });
  });

  it('adds the lock key as an attribute only when asked', async () => {
    const { locks, collect } = await setup(true);
    await locks.withLock('keyed', () => undefined);
    const m = await collect();
    expect(m.get(LOCK_METRICS.acquired)!.map((p) => p.attributes['lock.key'])).toEqual(['keyed']);
  });
});
