import type { BenchConfig } from '../config.js';
import type { Contender, ContenderSpec } from '../contenders/contender.js';
import { runCycles, summarize } from '../support/cycles.js';
import type { CycleRun, CycleSummary } from '../support/cycles.js';
import type { RedisStats } from '../support/redis-stats.js';
import { Samples, collectGarbage, median, orderFor } from '../support/samples.js';
import type { Log } from '../support/log.js';

export interface UncontendedRow extends CycleSummary {
  readonly id: string;
  readonly label: string;
  /** Median over the rounds of this contender's rate divided by bare's in the same round. */
  readonly ratioToBare: number;
}

export interface UncontendedResult {
  /** One table per worker count. */
  readonly byWorkers: readonly { readonly workers: number; readonly rows: readonly UncontendedRow[] }[];
}

/** Median over the rounds of `a`'s rate divided by `b`'s in the same round (`reps` are in round order). */
export function medianRatio(a: CycleSummary, b: CycleSummary): number {
  return median(a.reps.map((run, i) => run.cyclesPerSec / (b.reps[i]?.cyclesPerSec ?? Number.NaN)));
}

/**
 * Scenario 1. N async workers (1 and 50), each on its own key, loop acquire -> release. Every contender is created
 * and warmed up once; then each runs one short slice per round, the order reversing every other round, so that a
 * change in the machine's load during the run hits every contender alike. Rates are medians over the rounds, and
 * ratios medians of the per-round ratios.
 */
export async function runUncontended(
  config: BenchConfig,
  contenders: readonly ContenderSpec[],
  url: string,
  stats: RedisStats,
  log: Log,
): Promise<UncontendedResult> {
  const { warmupMs, sliceMs, rounds, workers: workerCounts } = config.uncontended;
  const byWorkers = [];
  for (const workers of workerCounts) {
    const keys = Array.from({ length: workers }, (_, i) => `k${i}`);
    const runs = new Map<string, CycleRun[]>(contenders.map((c) => [c.id, []]));
    const samples = new Map<string, Samples>(contenders.map((c) => [c.id, new Samples()]));
    const locks = new Map<string, Contender>();
    try {
      for (const spec of contenders) {
        const lock = await spec.create(url, `bench:u${workers}:${spec.id}:`);
        locks.set(spec.id, lock);
        await runCycles(lock, keys, warmupMs);
      }
      for (let round = 0; round < rounds; round++) {
        for (const spec of orderFor(contenders, round)) {
          collectGarbage();
          runs.get(spec.id)!.push(await runCycles(locks.get(spec.id)!, keys, sliceMs, samples.get(spec.id)!, stats));
        }
        await stats.flush();
        log(
          `uncontended ${workers}w round ${round + 1}/${rounds}: ${contenders.map((c) => `${c.id} ${Math.round(runs.get(c.id)!.at(-1)!.cyclesPerSec)}`).join(', ')}`,
        );
      }
    } finally {
      for (const lock of locks.values()) await lock.close();
    }
    const summaries = contenders.map((c) => ({ spec: c, s: summarize(runs.get(c.id)!, samples.get(c.id)!) }));
    const bare = summaries.find((x) => x.spec.kind === 'bare')?.s;
    byWorkers.push({
      workers,
      rows: summaries.map(({ spec, s }) => ({
        id: spec.id,
        label: spec.label,
        ...s,
        ratioToBare: bare ? medianRatio(s, bare) : Number.NaN,
      })),
    });
  }
  return { byWorkers };
}
