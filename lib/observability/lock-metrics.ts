import type { LockEngine } from '../locking/engine/lock-engine.js';
import type { LockLogger } from '../locking/events/lock-events.js';
import { LOAD_KINDS } from '../locking/activity/engine-activity.js';
import type { LockLoad } from '../types/load.types.js';

/** What an observable gauge's callback is given (the part used here). */
export interface ObservableResultLike {
  observe(value: number, attributes?: Record<string, string>): void;
}

/** An OpenTelemetry observable gauge (the part used here). */
export interface ObservableGaugeLike {
  addCallback(callback: (result: ObservableResultLike) => void): void;
  removeCallback(callback: (result: ObservableResultLike) => void): void;
}

/** The parts of an OpenTelemetry `Meter` used here (kept structural so `@opentelemetry/api` stays optional). */
export interface MeterLike {
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string },
  ): {
    record(value: number, attributes?: Record<string, string>): void;
  };
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): {
    add(value: number, attributes?: Record<string, string>): void;
  };
  /** Absent on an older or partial meter: the gauges are left out then, the rest is recorded. */
  createObservableGauge?(name: string, options?: { description?: string; unit?: string }): ObservableGaugeLike;
}

/** Options of `attachLockMetrics` and of the module option `metrics`. */
export interface LockMetricsOptions {
  /** Meter to record with. Default: `metrics.getMeter('nest-redis-locks')` from `@opentelemetry/api`. */
  readonly meter?: MeterLike;
  /** Add the lock key as attribute `lock.key`. Default `false`: keys are unbounded, metrics cardinality is not. */
  readonly keyAttribute?: boolean;
}

/** Metric names, for dashboards. */
export const LOCK_METRICS = Object.freeze({
  waitDuration: 'lock.wait.duration',
  holdDuration: 'lock.hold.duration',
  acquired: 'lock.acquired',
  contended: 'lock.contended',
  timeouts: 'lock.timeouts',
  lost: 'lock.lost',
  heldTooLong: 'lock.held_too_long',
  skipped: 'lock.skipped',
  holds: 'lock.holds',
  waiters: 'lock.waiters',
});

/**
 * Records the engine's events as OpenTelemetry metrics: wait and hold time histograms (ms), counters for
 * acquisitions, contention, timeouts, lost locks, held-too-long alarms and skipped calls, tagged by `lock.kind`
 * (`'lock'` or `'semaphore'`) and `lock.mode` (and `lock.key` when opted in); and two observable gauges, the holds
 * and the waiters of this process now, by `lock.kind` (`'lock'`, `'semaphore'` or `'leader'`), read when the meter
 * collects. Returns a function that detaches it.
 */
export function attachLockMetrics(
  engine: LockEngine,
  meter: MeterLike,
  options: Omit<LockMetricsOptions, 'meter'> = {},
): () => void {
  const waitDuration = meter.createHistogram(LOCK_METRICS.waitDuration, {
    description: 'Time spent acquiring a lock',
    unit: 'ms',
  });
  const holdDuration = meter.createHistogram(LOCK_METRICS.holdDuration, {
    description: 'Time a lock was held',
    unit: 'ms',
  });
  const acquired = meter.createCounter(LOCK_METRICS.acquired, {
    description: 'Locks acquired (reentrant ones included)',
  });
  const contended = meter.createCounter(LOCK_METRICS.contended, { description: 'Acquisitions that had to wait' });
  const timeouts = meter.createCounter(LOCK_METRICS.timeouts, { description: 'Acquisitions that timed out' });
  const lost = meter.createCounter(LOCK_METRICS.lost, { description: 'Locks lost while held' });
  const heldTooLong = meter.createCounter(LOCK_METRICS.heldTooLong, {
    description: 'Holds or waits past their alarm threshold',
  });
  const skipped = meter.createCounter(LOCK_METRICS.skipped, {
    description: "Calls not run because the lock was busy or Redis unavailable (ifLocked: 'skip')",
  });
  const attrs = (e: { key: string; kind: string; mode: string }): Record<string, string> =>
    options.keyAttribute
      ? { 'lock.kind': e.kind, 'lock.mode': e.mode, 'lock.key': e.key }
      : { 'lock.kind': e.kind, 'lock.mode': e.mode };
  const offs = [
    engine.on('acquired', (e) => {
      const a = { ...attrs(e), 'lock.reentrant': String(e.reentrant) };
      acquired.add(1, a);
      if (!e.reentrant) waitDuration.record(e.waitedMs, a);
    }),
    engine.on('released', (e) => holdDuration.record(e.heldMs, attrs(e))),
    engine.on('contended', (e) => contended.add(1, attrs(e))),
    engine.on('timeout', (e) => timeouts.add(1, attrs(e))),
    engine.on('lost', (e) => lost.add(1, attrs(e))),
    engine.on('held-too-long', (e) => heldTooLong.add(1, { ...attrs(e), 'lock.detected_by': e.detectedBy })),
    engine.on('skipped', (e) => skipped.add(1, { ...attrs(e), 'lock.skip_reason': e.reason })),
  ];
  const detachGauges = attachLoadGauges(meter, () => engine.activity().load());
  return () => {
    offs.forEach((off) => off());
    detachGauges();
  };
}

/**
 * The gauges `lock.holds` and `lock.waiters`: one data point per kind, zeros included (a dashboard sees 0, not a
 * gap). Each collection walks this process's holds and waits once per gauge; nothing is kept between collections.
 */
function attachLoadGauges(meter: MeterLike, load: () => LockLoad): () => void {
  if (typeof meter.createObservableGauge !== 'function') return () => undefined;
  const holds = meter.createObservableGauge(LOCK_METRICS.holds, {
    description: 'Holds this process keeps now (locks, permits, leaderships)',
    unit: '{hold}',
  });
  const waiters = meter.createObservableGauge(LOCK_METRICS.waiters, {
    description: 'Acquisitions of this process waiting now',
    unit: '{waiter}',
  });
  const onHolds = (result: ObservableResultLike) => {
    const now = load().holds;
    for (const kind of LOAD_KINDS) result.observe(now[kind], { 'lock.kind': kind });
  };
  const onWaiters = (result: ObservableResultLike) => {
    const now = load().waiters;
    for (const kind of LOAD_KINDS) result.observe(now[kind], { 'lock.kind': kind });
  };
  holds.addCallback(onHolds);
  waiters.addCallback(onWaiters);
  return () => {
    holds.removeCallback(onHolds);
    waiters.removeCallback(onWaiters);
  };
}

/** Whether this process has said that `@opentelemetry/api` is missing (said once, not at every start). */
let toldMissingApi = false;

/**
 * `attachLockMetrics` with the global OpenTelemetry meter when `@opentelemetry/api` is installed; does nothing when
 * it is not. That is said (a warning, once per process) only when the application asked for metrics (`requested`:
 * the `metrics` option set); with the default, metrics are simply off, silently.
 */
export async function attachOpenTelemetryMetrics(
  engine: LockEngine,
  options: LockMetricsOptions,
  logger?: LockLogger,
  requested = false,
): Promise<() => void> {
  let meter = options.meter;
  if (!meter) {
    try {
      const api = (await import('@opentelemetry/api')) as { metrics: { getMeter(name: string): MeterLike } };
      meter = api.metrics.getMeter('nest-redis-locks');
    } catch {
      if (requested && !toldMissingApi) {
        toldMissingApi = true;
        logger?.warn(
          'the metrics option asks for lock metrics, but @opentelemetry/api is not installed: lock metrics are off ' +
            '(install @opentelemetry/api, or pass a meter in metrics.meter)',
        );
      }
      return () => undefined;
    }
  }
  return attachLockMetrics(engine, meter, options);
}
