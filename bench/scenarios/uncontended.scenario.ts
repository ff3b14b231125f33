import type { BenchConfig } from '../config.js';
import type { ContenderSpec } from '../contenders/contender.js';
import { summarize, warmThenMeasure } from '../support/cycles.js';
import type { CycleRun, CycleSummary } from '../support/cycles.js';
import type { RedisStats } from '../support/redis-stats.js';
import { Samples, orderFor } from '../support/samples.js';
import type { Log } from '../support/log.js';

export interface UncontendedRow extends CycleSummary {
  readonly id: string;
  readonly label: string;
  readonly ratioToBare: number;
}

export interface UncontendedResult {
  /** One table per worker count. */
  readonly byWorkers: readonly { readonly workers: number; readonly rows: readonly UncontendedRow[] }[];
}

/**
 * Scenario 1. N async workers (1 and 50), each on its own key, loop acquire -> release for a fixed time.
 * Every contender runs in every repetition; the order reverses on odd repetitions.
 */
export async function runUncontended(
  config: BenchConfig,
  contenders: readonly ContenderSpec[],
  url: string,
  stats: RedisStats,
  log: Log,
): Promise<UncontendedResult> {
  const { warmupMs, durationMs, workers: workerCounts } = config.uncontended;
  const byWorkers = [];
  for (const workers of workerCounts) {
    const runs = new Map<string, CycleRun[]>(contenders.map((c) => [c.id, []]));
    const samples = new Map<string, Samples>(contenders.map((c) => [c.id, new Samples()]));
    for (let rep = 0; rep < config.reps; rep++) {
      for (const spec of orderFor(contenders, rep)) {
        const prefix = `bench:u${workers}:${spec.id}:${rep}:`;
        const lock = await spec.create(url, prefix);
        const keys = Array.from({ length: workers }, (_, i) => `k${i}`);
        const run = await warmThenMeasure(lock, keys, warmupMs, durationMs, samples.get(spec.id)!, stats);
        await lock.close();
        runs.get(spec.id)!.push(run);
        log(`uncontended ${workers}w rep ${rep + 1}/${config.reps} ${spec.id}: ${Math.round(run.cyclesPerSec)} cycles/s`);
      }
      await stats.flush();
    }
    const summaries = contenders.map((c) => ({ spec: c, s: summarize(runs.get(c.id)!, samples.get(c.id)!) }));
    const bare = summaries.find((x) => x.spec.kind === 'bare')?.s.cyclesPerSec ?? Number.NaN;
    byWorkers.push({
      workers,
      rows: summaries.map(({ spec, s }) => ({ id: spec.id, label: spec.label, ...s, ratioToBare: s.cyclesPerSec / bare })),
    });
  }
  return { byWorkers };
}
