import type { LoadCounts } from '../types/load.types.js';
import type { FleetInstanceRecord } from './fleet-store.js';
import { LOAD_HISTORY_WINDOW_MS } from './load-history.js';
import type { BoardFleet, BoardFleetInstance, BoardLoadSample } from './board-fleet.types.js';

const FIELDS = ['holds', 'waiters', 'inDoubt', 'heldAlarms', 'waitAlarms'] as const;
const GAUGES = ['holds', 'waiters', 'inDoubt'] as const;
const ALARMS = ['heldAlarms', 'waitAlarms'] as const;
/** The shortest span the axis shows, in sample intervals (a fresh board's one sample is not a point on an edge). */
const MIN_SPAN_STEPS = 2;
/** The grid step of a fleet whose instances keep no samples (`historySampleMs: 0`), in milliseconds. */
const NO_SAMPLES_STEP_MS = 1_000;
/** The most grid points (a chart is a few hundred pixels wide). */
const MAX_POINTS = 300;

const zero = (): Record<keyof LoadCounts, number> => ({ lock: 0, semaphore: 0, leader: 0 });
const empty = (at: number): BoardLoadSample => ({
  at,
  holds: zero(),
  waiters: zero(),
  inDoubt: zero(),
  heldAlarms: zero(),
  waitAlarms: zero(),
});

function add(into: BoardLoadSample, s: BoardLoadSample, fields: readonly (typeof FIELDS)[number][]): void {
  for (const f of fields)
    for (const k of ['lock', 'semaphore', 'leader'] as const) (into[f] as Record<string, number>)[k] += s[f][k];
}

/**
 * The fleet on one grid: each instance's gauges at a grid time are those of its last sample at or before it (none
 * once it is older than two of its intervals: the instance was gone, or not started); its alarms at a grid time are
 * those of its samples in the interval ending there. `records` are the instances as published, `self` the answering
 * one's (its samples and the numbers now, fresher than what it published).
 */
export function fleetSeries(
  records: readonly FleetInstanceRecord[],
  self: FleetInstanceRecord & { readonly now: BoardLoadSample },
  now: number,
  error?: string,
): BoardFleet {
  const all = [self, ...records.filter((r) => r.id !== self.id)];
  const stepMs = Math.max(1, Math.min(...all.map((r) => r.sampleMs || NO_SAMPLES_STEP_MS)));
  const oldest = Math.min(now, ...all.flatMap((r) => r.samples.map((s) => s.at)));
  const from = Math.max(now - LOAD_HISTORY_WINDOW_MS, Math.min(oldest, now - MIN_SPAN_STEPS * stepMs));
  const step = Math.max(stepMs, (now - from) / MAX_POINTS);
  const times: number[] = [];
  for (let t = now; t >= from - step / 2 && times.length <= MAX_POINTS; t -= step) times.unshift(t);
  const instances = all.map((r): BoardFleetInstance => {
    const samples = r === self ? [...r.samples.filter((s) => s.at < now), self.now] : r.samples.slice();
    samples.sort((a, b) => a.at - b.at);
    const stale = 2 * (r.sampleMs || stepMs);
    let i = -1;
    const series = times.map((t, n) => {
      const point = empty(t);
      const start = n === 0 ? -Infinity : times[n - 1];
      while (i + 1 < samples.length && samples[i + 1].at <= t) {
        i++;
        if (samples[i].at > start) add(point, samples[i], ALARMS);
      }
      if (i >= 0 && t - samples[i].at <= stale) add(point, samples[i], GAUGES);
      return point;
    });
    const last = samples[samples.length - 1] ?? empty(now);
    const windowAlarms = empty(last.at);
    add(windowAlarms, last, GAUGES);
    for (const s of samples) if (s.at >= now - LOAD_HISTORY_WINDOW_MS) add(windowAlarms, s, ALARMS);
    return {
      id: r.id,
      host: r.host,
      pid: r.pid,
      app: r.app,
      self: r === self,
      sampleMs: r.sampleMs,
      lastAt: last.at,
      now: windowAlarms,
      series,
      inDoubt: r.inDoubt,
    };
  });
  const total = times.map((t, n) => {
    const point = empty(t);
    for (const instance of instances) add(point, instance.series[n], FIELDS);
    return point;
  });
  return { windowMs: LOAD_HISTORY_WINDOW_MS, stepMs, from: times[0] ?? from, to: now, times, instances, total, error };
}
