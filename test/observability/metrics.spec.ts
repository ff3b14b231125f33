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
    for (const points of m.values())
      for (const p of points) expect(['lock', 'semaphore']).toContain(p.attributes['lock.kind']);
  });

  it('adds the lock key as an attribute only when asked', async () => {
    const { locks, collect } = await setup(true);
    await locks.withLock('keyed', () => undefined);
    const m = await collect();
    expect(m.get(LOCK_METRICS.acquired)!.map((p) => p.attributes['lock.key'])).toEqual(['keyed']);
  });
});
