import type { BenchConfig } from '../config.js';
import type { Contender, ContenderSpec } from '../contenders/contender.js';
import type { Log } from '../support/log.js';
import { CommandMonitor, perUnit, totalOf } from '../support/redis-stats.js';
import type { CommandCounts, RedisStats } from '../support/redis-stats.js';
import { sleep } from '../support/samples.js';
import { runRound } from './handoff.scenario.js';

/**
 * Longer than this library's subscription linger (1 s): lets a lingering UNSUBSCRIBE happen inside the window. The
 * other contenders keep no subscriptions, so they skip the wait.
 */
const SETTLE_MS = 1_200;

export interface CommandCount {
  /** Acquisitions (each with its release) in the window. */
  readonly acquisitions: number;
  /** Every command Redis executed, per acquisition, from INFO commandstats (script-run commands included). */
  readonly total: number;
  /** Commands clients sent over the wire (round trips issued), per acquisition, from MONITOR. */
  readonly wire: number;
  /** Commands run inside Lua scripts, per acquisition, from MONITOR. */
  readonly inScripts: number;
  /** INFO commandstats per command, per acquisition. */
  readonly byCommand: CommandCounts;
  /** Wire commands per command, per acquisition. */
  readonly wireByCommand: CommandCounts;
}

export interface CommandsRow {
  readonly id: string;
  readonly label: string;
  readonly uncontended: CommandCount;
  readonly contended: CommandCount;
  readonly contendedRatioToBare: number;
}

export interface CommandsResult {
  readonly waiters: number;
  readonly rows: readonly CommandsRow[];
}

async function count(
  stats: RedisStats,
  url: string,
  acquisitions: number,
  work: () => Promise<void>,
): Promise<CommandCount> {
  await stats.reset();
  const monitor = await CommandMonitor.start(url);
  await work();
  const seen = await monitor.stop(stats.admin);
  const { calls } = await stats.commandCounts();
  delete calls.echo;
  return {
    acquisitions,
    total: totalOf(calls) / acquisitions,
    wire: totalOf(seen.wire) / acquisitions,
    inScripts: totalOf(seen.script) / acquisitions,
    byCommand: perUnit(calls, acquisitions),
    wireByCommand: perUnit(seen.wire, acquisitions),
  };
}

async function measure(
  spec: ContenderSpec,
  config: BenchConfig,
  url: string,
  stats: RedisStats,
): Promise<Omit<CommandsRow, 'contendedRatioToBare'>> {
  const { uncontendedCycles, contendedRounds } = config.commands;
  const { waiters, holdMs } = config.handoff;
  const lock: Contender = await spec.create(url, `bench:c:${spec.id}:`);
  const settle = () => sleep(spec.kind === 'library' ? SETTLE_MS : 50);
  try {
    // Warm-up: scripts loaded, connections ready, subscriptions made and dropped again.
    for (let i = 0; i < 20; i++) await lock.withLock('warm', async () => undefined);
    await runRound(lock, 'warm-hot', waiters, holdMs);
    await settle();
    const uncontended = await count(stats, url, uncontendedCycles, async () => {
      for (let i = 0; i < uncontendedCycles; i++) await lock.withLock('solo', async () => undefined);
    });
    const contended = await count(stats, url, contendedRounds * waiters, async () => {
      for (let r = 0; r < contendedRounds; r++) {
        const round = await runRound(lock, 'hot', waiters, holdMs);
        if (round.failures > 0)
          throw new Error(`${spec.id}: ${round.failures} acquisitions gave up while counting commands`);
      }
      await settle();
    });
    return { id: spec.id, label: spec.label, uncontended, contended };
  } finally {
    await lock.close();
  }
}

/** Scenario 3: Redis commands per acquisition (with its release), uncontended and with 20 waiters on one key. */
export async function runCommands(
  config: BenchConfig,
  contenders: readonly ContenderSpec[],
  url: string,
  stats: RedisStats,
  log: Log,
): Promise<CommandsResult> {
  const rows: Omit<CommandsRow, 'contendedRatioToBare'>[] = [];
  for (const spec of contenders) {
    const row = await measure(spec, config, url, stats);
    rows.push(row);
    log(
      `commands ${spec.id}: ${row.uncontended.total.toFixed(1)} uncontended, ${row.contended.total.toFixed(1)} contended per acquisition`,
    );
    await stats.flush();
  }
  const bare = rows.find((r) => r.id === contenders.find((c) => c.kind === 'bare')?.id);
  return {
    waiters: config.handoff.waiters,
    rows: rows.map((r) => ({
      ...r,
      contendedRatioToBare: bare ? r.contended.total / bare.contended.total : Number.NaN,
    })),
  };
}
