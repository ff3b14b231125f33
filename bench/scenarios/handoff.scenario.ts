import type { BenchConfig } from '../config.js';
import type { Contender, ContenderSpec } from '../contenders/contender.js';
import type { Log } from '../support/log.js';
import type { RedisStats } from '../support/redis-stats.js';
import { Samples, collectGarbage, median, orderFor, sleep } from '../support/samples.js';

/** One round: `waiters` callers ask for one key at the same instant; each holds it ~`holdMs`, once. */
export interface RoundResult {
  /** From the start of the round until the last release resolved, in milliseconds. */
  readonly drainMs: number;
  /** Sum of the measured hold times, in milliseconds (the floor for the drain time). */
  readonly holdSumMs: number;
  /** Acquisitions that gave up (the implementation's wait ran out) and were asked again. */
  readonly failures: number;
  /** Times two callers held the lock at once: must be 0. */
  readonly overlaps: number;
}

/**
 * Holds for at least `ms` from `at` without blocking the event loop: a timer (which may fire a little early,
 * libuv timers run on a cached loop clock), then `setImmediate` turns for whatever is left.
 */
async function holdFor(at: number, ms: number): Promise<void> {
  await sleep(ms);
  while (performance.now() - at < ms) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Runs one round. Handoff latency is the time from the end of one holder's critical section (it is about to
 * call release) to the start of the next holder's, both read from the same monotonic high-resolution clock
 * (`performance.now()`, which is `process.hrtime` based) in this one process.
 */
export async function runRound(
  lock: Contender,
  key: string,
  waiters: number,
  holdMs: number,
  handoffs?: Samples,
): Promise<RoundResult> {
  let lastRelease = Number.NaN;
  let holders = 0;
  let overlaps = 0;
  let holdSumMs = 0;
  let failures = 0;
  const critical = async () => {
    const at = performance.now();
    if (holders++ > 0) overlaps++;
    if (!Number.isNaN(lastRelease)) handoffs?.push(at - lastRelease);
    await holdFor(at, holdMs);
    holders--;
    const end = performance.now();
    holdSumMs += end - at;
    lastRelease = end;
  };
  const start = performance.now();
  await Promise.all(
    Array.from({ length: waiters }, async () => {
      for (;;) {
        try {
          await lock.withLock(key, critical);
          return;
        } catch {
          failures++;
        }
      }
    }),
  );
  return { drainMs: performance.now() - start, holdSumMs, failures, overlaps };
}

export interface HandoffRow {
  readonly id: string;
  readonly label: string;
  readonly rounds: number;
  readonly handoffP50Ms: number;
  readonly handoffP99Ms: number;
  /** Median over rounds. */
  readonly drainMs: number;
  readonly holdSumMs: number;
  /** Median over rounds of drain / sum of holds. */
  readonly drainToHolds: number;
  readonly failures: number;
  readonly overlaps: number;
  readonly p50RatioToBare: number;
  readonly drainRatioToBare: number;
}

export interface HandoffResult {
  readonly waiters: number;
  readonly holdMs: number;
  readonly rows: readonly HandoffRow[];
}

/** Scenario 2: 20 waiters on one key, each holding it ~1 ms; drain time and handoff latency. */
export async function runHandoff(
  config: BenchConfig,
  contenders: readonly ContenderSpec[],
  url: string,
  stats: RedisStats,
  log: Log,
): Promise<HandoffResult> {
  const { waiters, holdMs, warmupRounds, minRounds, maxRounds, budgetMs } = config.handoff;
  const handoffs = new Map(contenders.map((c) => [c.id, new Samples()]));
  const rounds = new Map<string, RoundResult[]>(contenders.map((c) => [c.id, []]));
  for (let rep = 0; rep < config.reps; rep++) {
    for (const spec of orderFor(contenders, rep)) {
      const lock = await spec.create(url, `bench:h:${spec.id}:${rep}:`);
      for (let i = 0; i < warmupRounds; i++) await runRound(lock, 'hot', waiters, holdMs);
      collectGarbage();
      const t0 = performance.now();
      const mine: RoundResult[] = [];
      while (mine.length < maxRounds && (mine.length < minRounds || performance.now() - t0 < budgetMs)) {
        mine.push(await runRound(lock, 'hot', waiters, holdMs, handoffs.get(spec.id)));
      }
      await lock.close();
      rounds.get(spec.id)!.push(...mine);
      log(
        `handoff rep ${rep + 1}/${config.reps} ${spec.id}: ${mine.length} rounds, median drain ${median(mine.map((r) => r.drainMs)).toFixed(1)} ms`,
      );
    }
    await stats.flush();
  }
  const partial = contenders.map((spec) => {
    const rs = rounds.get(spec.id)!;
    const [handoffP50Ms, handoffP99Ms] = handoffs.get(spec.id)!.percentiles([50, 99]);
    return {
      id: spec.id,
      label: spec.label,
      kind: spec.kind,
      rounds: rs.length,
      handoffP50Ms,
      handoffP99Ms,
      drainMs: median(rs.map((r) => r.drainMs)),
      holdSumMs: median(rs.map((r) => r.holdSumMs)),
      drainToHolds: median(rs.map((r) => r.drainMs / r.holdSumMs)),
      failures: rs.reduce((a, r) => a + r.failures, 0),
      overlaps: rs.reduce((a, r) => a + r.overlaps, 0),
    };
  });
  const bare = partial.find((r) => r.kind === 'bare');
  return {
    waiters,
    holdMs,
    rows: partial.map(({ kind: _kind, ...r }) => ({
      ...r,
      p50RatioToBare: bare ? r.handoffP50Ms / bare.handoffP50Ms : Number.NaN,
      drainRatioToBare: bare ? r.drainMs / bare.drainMs : Number.NaN,
    })),
  };
}
