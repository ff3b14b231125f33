import type { BenchConfig } from '../config.js';
import { EngineContender } from '../contenders/library.contender.js';
import { summarize, warmThenMeasure } from '../support/cycles.js';
import type { CycleRun, CycleSummary } from '../support/cycles.js';
import type { Log } from '../support/log.js';
import type { RedisStats } from '../support/redis-stats.js';
import { Samples, orderFor } from '../support/samples.js';

interface Variant {
  readonly id: 'readers-one-key' | 'writers-distinct-keys';
  readonly label: string;
  readonly mode: 'read' | 'write';
  keys(workers: number): string[];
}

const VARIANTS: readonly Variant[] = [
  {
    id: 'readers-one-key',
    label: 'read locks, all on one key',
    mode: 'read',
    keys: (n) => Array.from({ length: n }, () => 'shared'),
  },
  {
    id: 'writers-distinct-keys',
    label: 'write locks, one key each',
    mode: 'write',
    keys: (n) => Array.from({ length: n }, (_, i) => `k${i}`),
  },
];

export interface ReadWriteRow extends CycleSummary {
  readonly id: Variant['id'];
  readonly label: string;
}

export interface ReadWriteResult {
  readonly workers: number;
  readonly rows: readonly ReadWriteRow[];
  /** Readers on one key, as a fraction of the rate of writers on distinct keys. */
  readonly readersToDistinct: number;
}

/** Scenario 4 (this library only): 50 readers sharing one key versus 50 writers on distinct keys. */
export async function runReadWrite(
  config: BenchConfig,
  url: string,
  stats: RedisStats,
  log: Log,
): Promise<ReadWriteResult> {
  const { workers, warmupMs, durationMs } = config.readWrite;
  const runs = new Map<string, CycleRun[]>(VARIANTS.map((v) => [v.id, []]));
  const samples = new Map(VARIANTS.map((v) => [v.id, new Samples()]));
  for (let rep = 0; rep < config.reps; rep++) {
    for (const v of orderFor(VARIANTS, rep)) {
      const lock = new EngineContender(url, `bench:rw:${v.id}:${rep}:`, { mode: v.mode });
      const run = await warmThenMeasure(lock, v.keys(workers), warmupMs, durationMs, samples.get(v.id)!, stats);
      await lock.close();
      runs.get(v.id)!.push(run);
      log(`read-write rep ${rep + 1}/${config.reps} ${v.id}: ${Math.round(run.cyclesPerSec)} cycles/s`);
    }
    await stats.flush();
  }
  const rows = VARIANTS.map((v) => ({ id: v.id, label: v.label, ...summarize(runs.get(v.id)!, samples.get(v.id)!) }));
  return { workers, rows, readersToDistinct: rows[0].cyclesPerSec / rows[1].cyclesPerSec };
}
