// `npm run bench:permits`: the semaphore rows, in one run against a throwaway redis-server, as ratios. Beside
// redis-semaphore's `Semaphore` (defaults, and retryInterval 1 ms) and the cheapest possible permit cycle (one ZADD
// guarded by ZCARD in a Lua script, then ZREM, retried every 1 ms: no lease renewal, no wake-ups, no fencing, no
// limit stored).
//  1. Uncontended permit cycle, 1 worker and 20 workers on distinct keys: cycles/s (interleaved slices, medians).
//  2. 20 workers on one 3-permit semaphore, each holding 1 ms then resting 2 ms (`permits-contended.ts`), in
//     interleaved rounds: holders at any instant (in this process and in Redis: 0 violations), hand-off to callers
//     that waited p50/p99, drain against the ideal (measured holds / permits), and every command each contender sent
//     per acquisition, release included (INFO commandstats, pub/sub commands included).
// Prints a table; writes bench/results/permits.json; exits 1 when this library's semaphore ever had more holders than
// its limit. `-- --scale` instead: 10,000 permits held for 60 s (bench/results/permits-scale.json). Not part of
// `npm test`; never a timed assertion.
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { LockEngine } from '../lib/locking/engine/lock-engine.js';
import { startRedisServer } from '../tools/redis-server.mjs';
import { contendedRun, percentile, sleep } from './permits-contended.js';
import type { ContendedRun, ContendedSettings, PermitContender } from './permits-contended.js';

const BARE_ACQUIRE = `if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then redis.call('ZADD', KEYS[1], 0, ARGV[1]) return 1 end return 0`;

function library(url: string): PermitContender {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench-permits:' });
  return {
    label: 'nest-redis-locks withPermit',
    cycle: (key, limit, hold) => engine.withPermit(key, hold, { limit, waitTimeoutMs: 60_000 }),
    close: () => engine.close(),
  };
}

function peer(url: string, retryInterval?: number): PermitContender {
  const client = new Redis(url);
  return {
    label: retryInterval
      ? `redis-semaphore Semaphore (retryInterval ${retryInterval} ms)`
      : 'redis-semaphore Semaphore (defaults)',
    cycle: async (key, limit, hold) => {
      const s = new Semaphore(client, `bench-rs:${key}`, limit, {
        ...(retryInterval ? { retryInterval } : {}),
        acquireTimeout: 60_000,
      });
      await s.acquire();
      try {
        await hold();
      } finally {
        await s.release();
      }
    },
    close: async () => void (await client.quit()),
  };
}

function bare(url: string): PermitContender {
  const client = new Redis(url);
  let n = 0;
  return {
    label: 'bare ZCARD+ZADD / ZREM (floor)',
    cycle: async (key, limit, hold) => {
      const token = String(++n);
      while ((await client.eval(BARE_ACQUIRE, 1, `bench-bare:${key}`, token, limit)) !== 1) await sleep(1);
      try {
        await hold();
      } finally {
        await client.zrem(`bench-bare:${key}`, token);
      }
    },
    close: async () => void (await client.quit()),
  };
}

async function uncontended(c: PermitContender, workers: number, ms: number): Promise<number> {
  let cycles = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < end) {
        await c.cycle(`u:${w}`, 3, async () => undefined);
        cycles++;
      }
    }),
  );
  return (cycles / ms) * 1000;
}

/**
 * Every command `c` sends in one contended run, by name: read with MONITOR, which logs each command a client sends
 * (pub/sub ones included) and the commands a script runs under the source 'lua' (not counted), until its wake-up
 * subscriptions have lingered out (1 s) so that its UNSUBSCRIBE is counted too. The holder count's connection
 * (`counter`) is left out. A run of its own: MONITOR slows Redis down.
 */
async function commandsSent(
  c: PermitContender,
  key: string,
  admin: Redis,
  counter: Redis,
  settings: ContendedSettings,
): Promise<{ acquisitions: number; sent: Record<string, number> }> {
  const own = /addr=(\S+)/.exec(String(await counter.client('INFO')))?.[1];
  // The subscriptions of an earlier run have lingered out: their UNSUBSCRIBE is not this run's.
  await sleep(1_200);
  const monitor = await admin.monitor();
  const sent: Record<string, number> = {};
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source !== 'lua' && source !== own) sent[args[0].toLowerCase()] = (sent[args[0].toLowerCase()] ?? 0) + 1;
  });
  await sleep(50);
  const run = await contendedRun(c, key, counter, settings);
  await sleep(1_200);
  monitor.disconnect();
  return { acquisitions: run.acquisitions, sent };
}

/** `--scale`: 10,000 permits (one per key, limit 3) held by one process at a 3 s lease for 60 s: how many were lost. */
async function scale(url: string): Promise<void> {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench-scale:', holdWarningMs: 0 });
  let lost = 0;
  engine.on('lost', () => lost++);
  const started = performance.now();
  const permits = [];
  for (let i = 0; i < 10_000; i += 500) {
    permits.push(
      ...(await Promise.all(
        Array.from({ length: 500 }, (_, j) => engine.acquirePermit(`s:${i + j}`, { limit: 3, leaseMs: 3_000 })),
      )),
    );
  }
  const acquiredMs = performance.now() - started;
  const holdMs = Number(process.env.SCALE_HOLD_MS ?? 60_000);
  const load = loadavg()[0];
  await sleep(holdMs);
  const held = permits.filter((p) => p.isHeld).length;
  const releasedAt = performance.now();
  const results = await Promise.all(permits.map((p) => p.release()));
  const releasedMs = performance.now() - releasedAt;
  const result = {
    at: new Date().toISOString(),
    commit: commit(),
    loadAverage: [+load.toFixed(2), +loadavg()[0].toFixed(2)],
    permits: permits.length,
    leaseMs: 3_000,
    heldMs: holdMs,
    acquiredMs: Math.round(acquiredMs),
    stillHeld: held,
    lostEvents: lost,
    releasedAsHeld: results.filter(Boolean).length,
    releasedMs: Math.round(releasedMs),
    noneLost: held === permits.length && lost === 0,
  };
  console.log(
    `scale: ${permits.length} permits acquired in ${result.acquiredMs} ms, held ${holdMs / 1000} s at a 3 s lease: ${held} still held, ${lost} lost events, ${result.releasedAsHeld} released as held`,
  );
  await engine.close();
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/permits-scale.json', JSON.stringify(result, null, 2) + '\n');
}

/** Median PING round trip on `client`, in milliseconds: a hand-off takes at least two round trips (wake-up, grant). */
async function pingMs(client: Redis): Promise<number> {
  const rtts: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await client.ping();
    rtts.push(performance.now() - t);
  }
  return percentile(rtts, 50);
}

function commit(): string {
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const server = await startRedisServer();
const admin = new Redis(server.url);
const counter = new Redis(server.url);
if (process.argv.includes('--scale')) {
  try {
    await scale(server.url);
  } finally {
    await admin.quit();
    await counter.quit();
    await server.stop();
  }
  process.exit(0);
}
const loadBefore = loadavg()[0];
const rttBefore = await pingMs(admin);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round2 = (x: number) => +x.toFixed(2);
const contenders = [library(server.url), peer(server.url), peer(server.url, 1), bare(server.url)];
try {
  // Uncontended: every contender warmed up, then 10 rounds of 0.4 s slices in alternating order (a drift of the
  // machine's load over the run hits them all alike); rates are medians over the rounds.
  for (const c of contenders) await uncontended(c, 1, 300);
  const one = contenders.map(() => [] as number[]);
  const twenty = contenders.map(() => [] as number[]);
  for (let round = 0; round < 10; round++) {
    const order = round % 2 ? [...contenders.keys()].reverse() : [...contenders.keys()];
    for (const i of order) {
      one[i].push(await uncontended(contenders[i], 1, 400));
      twenty[i].push(await uncontended(contenders[i], 20, 400));
    }
  }
  // Contended: 4 rounds of 20 workers x 10 acquisitions each, contenders interleaved (order alternating), each run
  // on a key of its own; then one run each under MONITOR for the commands sent.
  const settings: ContendedSettings = { workers: 20, limit: 3, cyclesPerWorker: 10, holdMs: 1, restMs: 2 };
  const runs = contenders.map(() => [] as ContendedRun[]);
  for (let round = 0; round < 4; round++) {
    const order = round % 2 ? [...contenders.keys()].reverse() : [...contenders.keys()];
    for (const i of order) runs[i].push(await contendedRun(contenders[i], `c:${round}:${i}`, counter, settings));
  }
  const commands = [];
  for (const [i, c] of contenders.entries()) commands.push(await commandsSent(c, `m:${i}`, admin, counter, settings));
  const rows: Record<string, unknown>[] = [];
  for (const [i, c] of contenders.entries()) {
    const rs = runs[i];
    const handoffs = rs.flatMap((r) => r.handoffs);
    const acquisitions = rs.reduce((n, r) => n + r.acquisitions, 0);
    const holdSum = rs.reduce((n, r) => n + r.holdSumMs, 0);
    const sent = Object.values(commands[i].sent).reduce((n, x) => n + x, 0);
    rows.push({
      contender: c.label,
      'uncontended 1 w /s': Math.round(median(one[i])),
      'uncontended 20 w /s': Math.round(median(twenty[i])),
      'handoff p50 ms': round2(percentile(handoffs, 50)),
      'handoff p99 ms': round2(percentile(handoffs, 99)),
      'handoffs (grants that waited)': handoffs.length,
      acquisitions,
      'mean hold ms': round2(holdSum / acquisitions),
      'drain / ideal': round2(median(rs.map((r) => r.drainMs / r.idealMs))),
      'commands / acquisition': round2(sent / commands[i].acquisitions),
      'loop delay p50/p99 ms': rs.map((r) => r.loopDelayMs.map(round2).join('/')).join(' '),
      'max holders': Math.max(...rs.map((r) => r.maxHolders)),
      'max holders in Redis': Math.max(...rs.map((r) => r.maxHoldersInRedis)),
      violations: rs.reduce((n, r) => n + r.violations + r.violationsInRedis, 0),
      commands: commands[i].sent,
    });
  }
  const floor = rows[rows.length - 1];
  const peerRow = rows[1];
  for (const r of rows) {
    r['1 w x redis-semaphore'] = round2(
      (r['uncontended 1 w /s'] as number) / (peerRow['uncontended 1 w /s'] as number),
    );
    r['1 w x floor'] = round2((r['uncontended 1 w /s'] as number) / (floor['uncontended 1 w /s'] as number));
    r['20 w x floor'] = round2((r['uncontended 20 w /s'] as number) / (floor['uncontended 20 w /s'] as number));
  }
  const rtt = [round2(rttBefore), round2(await pingMs(admin))];
  console.table(rows.map(({ commands: _, ...r }) => r));
  console.log(
    `load average ${round2(loadBefore)} -> ${round2(loadavg()[0])}; PING round trip p50 ${rtt[0]} -> ${rtt[1]} ms`,
  );
  for (const r of rows)
    console.log(
      `${r.contender as string}: commands sent over ${settings.workers * settings.cyclesPerWorker} acquisitions: ${JSON.stringify(r.commands)}`,
    );
  if ((rows[0].violations as number) > 0) {
    console.error(
      `VIOLATION: nest-redis-locks' semaphore had more than ${settings.limit} holders at once (see "violations" above)`,
    );
    process.exitCode = 1;
  }
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(
    'bench/results/permits.json',
    JSON.stringify(
      {
        at: new Date().toISOString(),
        commit: commit(),
        loadAverage: [round2(loadBefore), round2(loadavg()[0])],
        pingMs: rtt,
        contended: settings,
        rows,
      },
      null,
      2,
    ) + '\n',
  );
} finally {
  for (const c of contenders) await c.close();
  await admin.quit();
  await counter.quit();
  await server.stop();
}
