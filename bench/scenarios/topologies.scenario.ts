import { LockConfigError, LockEngine } from '../../lib/index.js';
import type { BenchConfig } from '../config.js';
import type { Contender } from '../contenders/contender.js';
import type { Log } from '../support/log.js';
import { isHousekeeping, perUnit, totalOf } from '../support/redis-stats.js';
import type { CommandCounts } from '../support/redis-stats.js';
import { runCycles } from '../support/cycles.js';
import { Samples, collectGarbage, median, orderFor } from '../support/samples.js';
import { TOPOLOGY_IDS, TOPOLOGY_LABELS, commandStats, resetStats, startTopology } from '../support/topologies.js';
import type { BenchTopology, EngineConnection, TopologyId } from '../support/topologies.js';
import { runRound } from './handoff.scenario.js';
import type { RoundResult } from './handoff.scenario.js';

/**
 * Replication and cluster-bus housekeeping (a replica's REPLCONF ACK, a Cluster client's CLUSTER SLOTS): not lock work.
 */
const TOPOLOGY_HOUSEKEEPING = new Set(['cluster', 'replconf', 'psync', 'sync', 'readonly']);

const noop = async (): Promise<void> => undefined;

/** This library's `LockEngine` on one topology: `acquire`, then `handle.release()`; defaults otherwise. */
class TopologyEngine implements Contender {
  private constructor(
    private readonly engine: LockEngine,
    private readonly connection: EngineConnection,
  ) {}

  /** @throws {LockConfigError} when the engine refuses the topology's connection input. */
  static open(topology: BenchTopology, prefix: string): TopologyEngine {
    const connection = topology.connect();
    try {
      return new TopologyEngine(new LockEngine({ ...connection.options, keyPrefix: prefix }), connection);
    } catch (err) {
      void connection.close();
      throw err;
    }
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const handle = await this.engine.acquire(key);
    try {
      return await fn();
    } finally {
      await handle.release();
    }
  }

  async close(): Promise<void> {
    try {
      await this.engine.close();
    } finally {
      await this.connection.close();
    }
  }
}

export interface TopologyRate {
  readonly workers: number;
  /** Median over repetitions. */
  readonly cyclesPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** cycles/s over `single`'s at the same worker count. */
  readonly ratioToSingle: number;
  /** cycles/s of each repetition. */
  readonly reps: readonly number[];
}

export interface TopologyRow {
  readonly id: TopologyId;
  readonly label: string;
  readonly settings: string;
  /** False when this build of the library refuses the topology (e.g. quorum before it exists), or it did not start. */
  readonly available: boolean;
  /** Why not, when not available: the engine's error message, or why the topology could not be started. */
  readonly unavailable?: string;
  /** Redis processes, replicas included. */
  readonly nodes: number;
  readonly rates: readonly TopologyRate[];
  /** Server-side commands per uncontended cycle, INFO commandstats summed over every node (replicas included). */
  readonly commandsPerCycle: number;
  readonly commandsByCommand: CommandCounts;
  readonly handoff: {
    readonly rounds: number;
    readonly p50Ms: number;
    readonly p99Ms: number;
    /** Median over rounds of drain / sum of holds. */
    readonly drainToHolds: number;
    readonly failures: number;
    readonly overlaps: number;
  };
}

export interface TopologiesResult {
  readonly workers: readonly number[];
  readonly commandCycles: number;
  readonly waiters: number;
  readonly holdMs: number;
  readonly rows: readonly TopologyRow[];
}

/** Lock commands per node since the last reset, summed over the nodes; housekeeping left out. */
function sumCommandStats(infos: readonly string[]): CommandCounts {
  const calls: CommandCounts = {};
  for (const info of infos) {
    for (const [, raw, n] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      const name = raw.split('|')[0].toLowerCase();
      if (isHousekeeping(name) || TOPOLOGY_HOUSEKEEPING.has(name)) continue;
      calls[name] = (calls[name] ?? 0) + Number(n);
    }
  }
  return calls;
}

interface Live {
  readonly topology: BenchTopology;
  readonly runs: Map<number, number[]>;
  readonly latencies: Map<number, Samples>;
  readonly errors: Map<number, number>;
  readonly handoffs: Samples;
  readonly rounds: RoundResult[];
}

/**
 * The `topologies` scenario: this library's engine on a single redis-server (the baseline), on a master with one
 * replica and `waitForReplicas: { replicas: 1 }`, on a 3-master Redis Cluster, and in quorum mode over 3 independent
 * masters (reported as not available where the engine refuses an array `redis`). Every topology is started here
 * and torn down after; all run at once and are measured in turn, the order reversed on every other repetition.
 */
export async function runTopologies(config: BenchConfig, log: Log): Promise<TopologiesResult> {
  const c = config.topologies;
  const { waiters, holdMs } = config.handoff;
  const started: BenchTopology[] = [];
  const unavailable = new Map<TopologyId, string>();
  const failedToStart: { id: TopologyId; reason: string }[] = [];
  try {
    for (const id of TOPOLOGY_IDS) {
      let topology: BenchTopology;
      try {
        topology = await startTopology(id);
      } catch (err) {
        // E.g. no redis-cli for the Cluster: the row says why, the other topologies are still measured.
        failedToStart.push({ id, reason: `could not be started: ${(err as Error).message.split('\n')[0]}` });
        log(`topologies: ${id} could not be started: ${(err as Error).message}`);
        continue;
      }
      started.push(topology);
      try {
        await TopologyEngine.open(topology, 'bench:probe:').close();
      } catch (err) {
        if (!(err instanceof LockConfigError)) throw err;
        unavailable.set(id, `not available in this build: ${err.message}`);
        await topology.dispose();
        log(`topologies: ${id} not available: ${err.message}`);
        continue;
      }
      log(`topologies: ${id} started (${topology.nodes.length} node(s))`);
    }
    const live: Live[] = started
      .filter((t) => !unavailable.has(t.id))
      .map((topology) => ({
        topology,
        runs: new Map(c.workers.map((w) => [w, []])),
        latencies: new Map(c.workers.map((w) => [w, new Samples()])),
        errors: new Map(c.workers.map((w) => [w, 0])),
        handoffs: new Samples(),
        rounds: [],
      }));

    for (let rep = 0; rep < config.reps; rep++) {
      for (const t of orderFor(live, rep)) {
        const id = t.topology.id;
        for (const workers of c.workers) {
          const lock = TopologyEngine.open(t.topology, `bench:t:${id}:${workers}:${rep}:`);
          const keys = Array.from({ length: workers }, (_, i) => `k${i}`);
          await runCycles(lock, keys, c.warmupMs);
          collectGarbage();
          const run = await runCycles(lock, keys, c.durationMs, t.latencies.get(workers));
          await lock.close();
          t.runs.get(workers)!.push(run.cyclesPerSec);
          t.errors.set(workers, t.errors.get(workers)! + run.errors);
          log(`topologies rep ${rep + 1}/${config.reps} ${id} ${workers}w: ${Math.round(run.cyclesPerSec)} cycles/s`);
        }
        const lock = TopologyEngine.open(t.topology, `bench:th:${id}:${rep}:`);
        for (let i = 0; i < c.handoffWarmupRounds; i++) await runRound(lock, 'hot', waiters, holdMs);
        collectGarbage();
        const t0 = performance.now();
        const mine: RoundResult[] = [];
        while (
          mine.length < c.handoffMaxRounds &&
          (mine.length < c.handoffMinRounds || performance.now() - t0 < c.handoffBudgetMs)
        ) {
          mine.push(await runRound(lock, 'hot', waiters, holdMs, t.handoffs));
        }
        await lock.close();
        t.rounds.push(...mine);
        log(
          `topologies rep ${rep + 1}/${config.reps} ${id} handoff: ${mine.length} rounds, median drain ${median(mine.map((r) => r.drainMs)).toFixed(1)} ms`,
        );
      }
    }

    // Commands per uncontended cycle: sequential cycles on distinct keys, counted on every node; not timed.
    const commands = new Map<TopologyId, CommandCounts>();
    for (const t of live) {
      const lock = TopologyEngine.open(t.topology, `bench:tc:${t.topology.id}:`);
      for (let i = 0; i < 50; i++) await lock.withLock(`w${i}`, noop);
      await resetStats(t.topology.nodes);
      for (let i = 0; i < c.commandCycles; i++) await lock.withLock(`k${i % 50}`, noop);
      commands.set(t.topology.id, sumCommandStats(await commandStats(t.topology.nodes)));
      await lock.close();
    }

    const single = live.find((t) => t.topology.id === 'single');
    const rateOf = (t: Live | undefined, workers: number) => (t ? median(t.runs.get(workers)!) : Number.NaN);
    const rows: TopologyRow[] = [];
    for (const id of TOPOLOGY_IDS) {
      const topology = started.find((x) => x.id === id);
      const t = live.find((x) => x.topology.id === id);
      if (!topology || !t) {
        rows.push({
          id,
          label: topology?.label ?? TOPOLOGY_LABELS[id],
          settings: topology?.settings ?? '',
          available: false,
          unavailable: unavailable.get(id) ?? failedToStart.find((x) => x.id === id)?.reason,
          nodes: topology?.nodes.length ?? 0,
          rates: [],
          commandsPerCycle: Number.NaN,
          commandsByCommand: {},
          handoff: {
            rounds: 0,
            p50Ms: Number.NaN,
            p99Ms: Number.NaN,
            drainToHolds: Number.NaN,
            failures: 0,
            overlaps: 0,
          },
        });
        continue;
      }
      const counts = commands.get(id)!;
      const [p50Ms, p99Ms] = t.handoffs.percentiles([50, 99]);
      rows.push({
        id,
        label: topology.label,
        settings: topology.settings,
        available: true,
        nodes: topology.nodes.length,
        rates: c.workers.map((workers) => {
          const [lp50, lp99] = t.latencies.get(workers)!.percentiles([50, 99]);
          return {
            workers,
            cyclesPerSec: rateOf(t, workers),
            p50Ms: lp50,
            p99Ms: lp99,
            errors: t.errors.get(workers)!,
            ratioToSingle: rateOf(t, workers) / rateOf(single, workers),
            reps: t.runs.get(workers)!,
          };
        }),
        commandsPerCycle: totalOf(counts) / c.commandCycles,
        commandsByCommand: perUnit(counts, c.commandCycles),
        handoff: {
          rounds: t.rounds.length,
          p50Ms,
          p99Ms,
          drainToHolds: median(t.rounds.map((r) => r.drainMs / r.holdSumMs)),
          failures: t.rounds.reduce((a, r) => a + r.failures, 0),
          overlaps: t.rounds.reduce((a, r) => a + r.overlaps, 0),
        },
      });
    }
    return { workers: c.workers, commandCycles: c.commandCycles, waiters, holdMs, rows };
  } finally {
    await Promise.all(started.map((t) => t.dispose()));
  }
}
