import { PerformanceObserver } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { Command } from 'ioredis';
import type { BenchConfig } from '../config.js';
import { LockEngine } from '../../lib/index.js';
import type { LockHandle } from '../../lib/index.js';
import type { Log } from '../support/log.js';
import type { RedisStats } from '../support/redis-stats.js';
import { collectGarbage, sleep } from '../support/samples.js';

/** Default lease of the library, in milliseconds (renewals every third of it). */
const DEFAULT_LEASE_MS = 30_000;
/** Calls closer together than this belong to one watchdog tick. */
const TICK_GAP_MS = 100;

interface ScriptCall {
  readonly sentAt: number;
  repliedAt: number;
  readonly holds: number;
  /** Process CPU (user + system, microseconds) when the call was sent. */
  readonly cpuAtSend: number;
  /** Process CPU once the reply was handled (a `setImmediate` after it: the watchdog has processed it by then). */
  cpuAfter: number;
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

export interface WatchdogMeasurement {
  readonly leaseMs: number;
  readonly locks: number;
  readonly windowMs: number;
  readonly ticks: number;
  /** Script calls (EVALSHA) per tick. */
  readonly callsPerTick: number;
  /** Sequential round trips per tick: calls sent together (pipelined) count as one. */
  readonly roundTripsPerTick: number;
  readonly locksPerCall: number;
  readonly locksPerRoundTrip: number;
  /** Locks renewed per tick (every held lock, when all is well). */
  readonly renewedPerTick: number;
  /** From the first call of a tick sent to its last reply, median, in milliseconds. */
  readonly tickLatencyMs: number;
  /** Node CPU of one tick, median, in milliseconds: from its first renewal call to its replies processed. */
  readonly nodeCpuPerTickMs: number;
  /** CPU of the renewal ticks in the window, as % of one core. */
  readonly renewalCpuPct: number;
  /** Time V8 spent collecting garbage in the window, in milliseconds (included in nodeCpuPct, not in the ticks). */
  readonly gcMs: number;
  /** Node CPU of the ticks per renewed lock, in microseconds. */
  readonly nodeCpuPerLockUs: number;
  /** Node CPU of the whole process over the window, as % of one core, at this lease. */
  readonly nodeCpuPct: number;
  /** redis-server CPU over the window, as % of one core. */
  readonly redisCpuPct: number;
  /** Redis commands per tick, from INFO commandstats (script-run commands included). */
  readonly redisCommandsPerTick: number;
  /** Redis time in the renewal scripts per tick, in milliseconds (commandstats usec of EVALSHA). */
  readonly redisScriptMsPerTick: number;
  /** Longest a single renewal script keeps Redis busy on average, in milliseconds (other clients wait that long). */
  readonly redisMsPerCall: number;
  /** Locks still held at the end (all of them, when no renewal failed). */
  readonly heldAtEnd: number;
  readonly lost: number;
}

async function acquireMany(engine: LockEngine, locks: number): Promise<LockHandle[]> {
  const handles: LockHandle[] = [];
  const batch = 200;
  for (let i = 0; i < locks; i += batch) {
    const part = Array.from({ length: Math.min(batch, locks - i) }, (_, j) => engine.acquire(`w${i + j}`));
    handles.push(...(await Promise.all(part)));
  }
  return handles;
}

/** Holds `locks` locks at `leaseMs` and watches the watchdog for `windowMs`, starting right after a tick. */
export async function measureWatchdog(
  url: string,
  stats: RedisStats,
  locks: number,
  leaseMs: number,
  windowMs: number,
): Promise<WatchdogMeasurement> {
  const client = new Redis(url);
  const calls: ScriptCall[] = [];
  let recording = false;
  // Every script call of the library goes through sendCommand (as EVALSHA, or EVAL after NOSCRIPT).
  const original = client.sendCommand.bind(client);
  client.sendCommand = (command: Command, stream?: never) => {
    const sent = original(command, stream);
    if (recording && (command.name === 'evalsha' || command.name === 'eval')) {
      const call: ScriptCall = {
        sentAt: performance.now(),
        repliedAt: Number.NaN,
        holds: Number(command.args[1]) / 2,
        cpuAtSend: cpuNow(),
        cpuAfter: Number.NaN,
      };
      calls.push(call);
      const done = () => {
        call.repliedAt = performance.now();
        setImmediate(() => (call.cpuAfter = cpuNow()));
      };
      command.promise.then(done, done);
    }
    return sent;
  };
  const engine = new LockEngine({ redis: client, keyPrefix: `bench:wd:${leaseMs}:`, leaseMs });
  let lost = 0;
  engine.on('lost', () => lost++);
  try {
    await acquireMany(engine, locks);
    // Let the first renewal wave (which aligns every hold on one schedule) pass, then start right after a tick.
    recording = true;
    const firstWaitMs = leaseMs / 3 + 2_000;
    const t0 = performance.now();
    while (
      performance.now() - t0 < firstWaitMs &&
      !(calls.length > 0 && performance.now() - calls[calls.length - 1].sentAt > TICK_GAP_MS)
    ) {
      await sleep(20);
    }
    if (calls.length === 0) throw new Error(`no watchdog renewal within ${firstWaitMs} ms at lease ${leaseMs} ms`);
    calls.length = 0;
    collectGarbage();
    let gcMs = 0;
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcMs += e.duration;
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    await stats.reset();
    const redis0 = await stats.cpuSeconds();
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    await sleep(windowMs);
    const elapsed = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    recording = false;
    gcObserver.disconnect();
    await sleep(TICK_GAP_MS);
    const redisCpu = (await stats.cpuSeconds()) - redis0;
    const { calls: cmdCalls, usec } = await stats.commandCounts();
    const ticks = groupTicks(calls.filter((c) => c.sentAt - start <= elapsed));
    const n = Math.max(ticks.length, 1);
    const renewed = ticks.reduce((a, t) => a + t.reduce((b, c) => b + c.holds, 0), 0);
    const roundTrips = ticks.reduce((a, t) => a + roundTripsOf(t), 0);
    const callsTotal = ticks.reduce((a, t) => a + t.length, 0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const tickCpuMs = ticks.map((t) => (Math.max(...t.map((c) => c.cpuAfter)) - t[0].cpuAtSend) / 1000);
    const tickCpuTotal = tickCpuMs.reduce((a, b) => a + b, 0);
    return {
      leaseMs,
      locks,
      windowMs: elapsed,
      ticks: ticks.length,
      callsPerTick: callsTotal / n,
      roundTripsPerTick: roundTrips / n,
      locksPerCall: renewed / Math.max(callsTotal, 1),
      locksPerRoundTrip: renewed / Math.max(roundTrips, 1),
      renewedPerTick: renewed / n,
      tickLatencyMs: medianOf(ticks.map((t) => Math.max(...t.map((c) => c.repliedAt)) - t[0].sentAt)),
      nodeCpuPerTickMs: medianOf(tickCpuMs),
      renewalCpuPct: (tickCpuTotal / elapsed) * 100,
      gcMs,
      nodeCpuPerLockUs: (tickCpuTotal * 1000) / Math.max(renewed, 1),
      nodeCpuPct: (cpuMs / elapsed) * 100,
      redisCpuPct: ((redisCpu * 1000) / elapsed) * 100,
      redisCommandsPerTick: Object.values(cmdCalls).reduce((a, b) => a + b, 0) / n,
      redisScriptMsPerTick: (usec.evalsha ?? 0) / 1000 / n,
      redisMsPerCall: (usec.evalsha ?? 0) / 1000 / Math.max(cmdCalls.evalsha ?? 1, 1),
      heldAtEnd: engine.heldCount,
      lost,
    };
  } finally {
    await engine.close();
    await client.quit();
  }
}

function groupTicks(calls: readonly ScriptCall[]): ScriptCall[][] {
  const ticks: ScriptCall[][] = [];
  for (const c of calls) {
    const last = ticks[ticks.length - 1];
    if (last && c.sentAt - last[last.length - 1].sentAt < TICK_GAP_MS) last.push(c);
    else ticks.push([c]);
  }
  return ticks;
}

/** A call sent after an earlier call of the same tick was answered starts a new round trip. */
function roundTripsOf(tick: readonly ScriptCall[]): number {
  let trips = 1;
  let firstReply = Number.POSITIVE_INFINITY;
  for (const c of tick) {
    if (c.sentAt > firstReply) {
      trips++;
      firstReply = Number.POSITIVE_INFINITY;
    }
    firstReply = Math.min(firstReply, c.repliedAt);
  }
  return trips;
}

function medianOf(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[s.length >> 1];
}

export interface WatchdogResult {
  readonly short: WatchdogMeasurement;
  /** Measured at the default 30 s lease (full run only). */
  readonly atDefault: WatchdogMeasurement | undefined;
  /** Node CPU at the default lease, scaled from the short-lease measurement by the ratio of the leases. */
  readonly scaledDefaultCpuPct: number;
}

/** Scenario 5: 10,000 locks held by one process; what the watchdog costs per renewal tick. */
export async function runWatchdog(
  config: BenchConfig,
  url: string,
  stats: RedisStats,
  log: Log,
): Promise<WatchdogResult> {
  const { locks, shortLeaseMs, shortWindowMs, measureDefaultLease, defaultWindowMs } = config.watchdog;
  const short = await measureWatchdog(url, stats, locks, shortLeaseMs, shortWindowMs);
  log(
    `watchdog lease ${shortLeaseMs} ms: ${short.ticks} ticks, ${short.callsPerTick} calls/tick, ${short.nodeCpuPerTickMs.toFixed(1)} ms CPU/tick`,
  );
  await stats.flush();
  let atDefault: WatchdogMeasurement | undefined;
  if (measureDefaultLease) {
    atDefault = await measureWatchdog(url, stats, locks, DEFAULT_LEASE_MS, defaultWindowMs);
    log(
      `watchdog lease ${DEFAULT_LEASE_MS} ms: ${atDefault.ticks} ticks, renewals ${atDefault.renewalCpuPct.toFixed(2)} % of a core`,
    );
    await stats.flush();
  }
  // Renewals per second scale with 1 / lease (each hold is renewed every lease / 3), whatever the tick grouping.
  return { short, atDefault, scaledDefaultCpuPct: (short.renewalCpuPct * shortLeaseMs) / DEFAULT_LEASE_MS };
}
