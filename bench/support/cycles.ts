import type { Contender } from '../contenders/contender.js';
import type { RedisStats } from './redis-stats.js';
import { Samples, collectGarbage, median } from './samples.js';

const noop = async (): Promise<void> => undefined;

/** One timed run of acquire+release loops. */
export interface CycleRun {
  readonly cycles: number;
  readonly errors: number;
  readonly elapsedMs: number;
  readonly cyclesPerSec: number;
  /** Node CPU (user + system) during the run, as % of one core. */
  readonly nodeCpuPct: number;
  /** redis-server CPU during the run, as % of one core. */
  readonly redisCpuPct: number;
}

/**
 * One async worker per entry of `keys`, each looping acquire -> release on its key until `durationMs` is up.
 * With `samples`, each cycle's latency (acquire call to release resolved) is recorded in milliseconds.
 */
export async function runCycles(
  lock: Contender,
  keys: readonly string[],
  durationMs: number,
  samples?: Samples,
  stats?: RedisStats,
): Promise<CycleRun> {
  let stop = false;
  let cycles = 0;
  let errors = 0;
  const worker = async (key: string) => {
    while (!stop) {
      const t0 = performance.now();
      try {
        await lock.withLock(key, noop);
      } catch {
        errors++;
        continue;
      }
      samples?.push(performance.now() - t0);
      cycles++;
    }
  };
  const redis0 = stats ? await stats.cpuSeconds() : 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const timer = setTimeout(() => {
    stop = true;
  }, durationMs);
  await Promise.all(keys.map(worker));
  clearTimeout(timer);
  const elapsedMs = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  const redis1 = stats ? await stats.cpuSeconds() : 0;
  return {
    cycles,
    errors,
    elapsedMs,
    cyclesPerSec: (cycles / elapsedMs) * 1000,
    nodeCpuPct: ((cpu.user + cpu.system) / 1000 / elapsedMs) * 100,
    redisCpuPct: (((redis1 - redis0) * 1000) / elapsedMs) * 100,
  };
}

/** Summary of several repetitions: medians of the rates, percentiles over every cycle of every repetition. */
export interface CycleSummary {
  readonly cyclesPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly nodeCpuPct: number;
  readonly redisCpuPct: number;
  readonly errors: number;
  readonly reps: readonly CycleRun[];
}

export function summarize(runs: readonly CycleRun[], samples: Samples): CycleSummary {
  const [p50Ms, p99Ms] = samples.percentiles([50, 99]);
  return {
    cyclesPerSec: median(runs.map((r) => r.cyclesPerSec)),
    p50Ms,
    p99Ms,
    nodeCpuPct: median(runs.map((r) => r.nodeCpuPct)),
    redisCpuPct: median(runs.map((r) => r.redisCpuPct)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    reps: runs,
  };
}

/** Warm-up, then a measured run; garbage collected in between. */
export async function warmThenMeasure(
  lock: Contender,
  keys: readonly string[],
  warmupMs: number,
  durationMs: number,
  samples: Samples,
  stats: RedisStats,
): Promise<CycleRun> {
  await runCycles(lock, keys, warmupMs);
  collectGarbage();
  return runCycles(lock, keys, durationMs, samples, stats);
}
