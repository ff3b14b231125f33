// `npm run bench:permits`: the semaphore rows, in one run against a throwaway redis-server, as ratios. Beside
// redis-semaphore's `Semaphore` (defaults, and retryInterval 1 ms) and the cheapest possible permit cycle (one ZADD
// guarded by ZCARD in a Lua script, then ZREM: no lease renewal, no wake-ups, no fencing, no limit stored).
//  1. Uncontended permit cycle, 1 worker and 20 workers on distinct keys: cycles/s.
//  2. 20 workers on one 3-permit semaphore, each holding 1 ms: hand-off latency (release to the next grant) p50/p99,
//     drain time against the ideal (total hold / permits), and wire commands per contended acquisition (INFO
//     commandstats, this library only).
// Prints a table; writes bench/results/permits.json. Not part of `npm test`; never a timed assertion.
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { LockEngine } from '../lib/locking/lock-engine.js';
import { startRedisServer } from '../tools/redis-server.mjs';

interface Contender {
  readonly label: string;
  cycle(key: string, limit: number, hold: () => Promise<void>): Promise<number>;
  close(): Promise<void>;
}

const BARE_ACQUIRE = `if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then redis.call('ZADD', KEYS[1], 0, ARGV[1]) return 1 end return 0`;

function library(url: string): Contender {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench-permits:' });
  return {
    label: 'nest-redis-locks withPermit',
    cycle: async (key, limit, hold) => {
      let granted = 0;
      await engine.withPermit(key, async () => {
        granted = performance.now();
        await hold();
      }, { limit, waitTimeoutMs: 60_000 });
      return granted;
    },
    close: () => engine.close(),
  };
}

function peer(url: string, retryInterval?: number): Contender {
  const client = new Redis(url);
  return {
    label: retryInterval ? `redis-semaphore Semaphore (retryInterval ${retryInterval} ms)` : 'redis-semaphore Semaphore (defaults)',
    cycle: async (key, limit, hold) => {
      const s = new Semaphore(client, `bench-rs:${key}`, limit, { ...(retryInterval ? { retryInterval } : {}), acquireTimeout: 60_000 });
      await s.acquire();
      const granted = performance.now();
      try {
        await hold();
      } finally {
        await s.release();
      }
      return granted;
    },
    close: async () => void (await client.quit()),
  };
}

function bare(url: string): Contender {
  const client = new Redis(url);
  let n = 0;
  return {
    label: 'bare ZCARD+ZADD / ZREM (floor)',
    cycle: async (key, limit, hold) => {
      const token = String(++n);
      while ((await client.eval(BARE_ACQUIRE, 1, `bench-bare:${key}`, token, limit)) !== 1) await new Promise((r) => setTimeout(r, 1));
      const granted = performance.now();
      try {
        await hold();
      } finally {
        await client.zrem(`bench-bare:${key}`, token);
      }
      return granted;
    },
    close: async () => void (await client.quit()),
  };
}

async function uncontended(c: Contender, workers: number, ms: number): Promise<number> {
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

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** 20 workers x `rounds` acquisitions on one 3-permit key, each holding 1 ms. */
async function contended(c: Contender, key: string, rounds: number): Promise<{ p50: number; p99: number; drainMs: number; idealMs: number; acquisitions: number }> {
  const releases: number[] = [];
  const handoffs: number[] = [];
  const holdMs = 1;
  const workers = 20;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = 0; i < rounds; i++) {
        const granted = await c.cycle(key, 3, async () => {
          await sleep(holdMs);
        });
        // The hand-over: from the latest release before this grant to the grant.
        const last = releases.filter((r) => r <= granted).pop();
        if (last !== undefined && granted - last < 1_000) handoffs.push(granted - last);
        releases.push(performance.now());
        releases.sort((a, b) => a - b);
        if (releases.length > 64) releases.splice(0, releases.length - 64);
      }
    }),
  );
  const drainMs = performance.now() - start;
  handoffs.sort((a, b) => a - b);
  const at = (q: number) => handoffs[Math.min(handoffs.length - 1, Math.floor(q * handoffs.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), drainMs, idealMs: (workers * rounds * holdMs) / 3, acquisitions: workers * rounds };
}

async function commandsPerAcquisition(url: string, admin: Redis): Promise<number> {
  const engine = library(url);
  await admin.config('RESETSTAT');
  const { acquisitions } = await contended(engine, 'cmd', 10);
  const info = await admin.info('commandstats');
  await engine.close();
  const calls = [...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].filter(([, name]) => !['info', 'config', 'subscribe', 'unsubscribe', 'ssubscribe', 'sunsubscribe', 'client', 'ping', 'select', 'hello'].includes(name));
  // Wire commands (EVALSHA/EVAL), not the commands scripts run inside.
  const wire = calls.filter(([, name]) => name === 'evalsha' || name === 'eval').reduce((n, [, , c]) => n + Number(c), 0);
  return wire / acquisitions;
}

/** `--scale`: 10,000 permits (one per key, limit 3) held by one process at a 3 s lease for 60 s: how many were lost. */
async function scale(url: string): Promise<void> {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench-scale:', holdWarningMs: 0 });
  let lost = 0;
  engine.on('lost', () => lost++);
  const started = performance.now();
  const permits = [];
  for (let i = 0; i < 10_000; i += 500) {
    permits.push(...(await Promise.all(Array.from({ length: 500 }, (_, j) => engine.acquirePermit(`s:${i + j}`, { limit: 3, leaseMs: 3_000 })))));
  }
  const acquiredMs = performance.now() - started;
  const holdMs = Number(process.env.SCALE_HOLD_MS ?? 60_000);
  await sleep(holdMs);
  const held = permits.filter((p) => p.isHeld).length;
  const results = await Promise.all(permits.map((p) => p.release()));
  console.log(`scale: ${permits.length} permits acquired in ${Math.round(acquiredMs)} ms, held ${holdMs / 1000} s at a 3 s lease: ${held} still held, ${lost} lost events, ${results.filter(Boolean).length} released as held`);
  await engine.close();
}

const server = await startRedisServer();
const admin = new Redis(server.url);
if (process.argv.includes('--scale')) {
  try {
    await scale(server.url);
  } finally {
    await admin.quit();
    await server.stop();
  }
  process.exit(0);
}
try {
  const contenders = [library(server.url), peer(server.url), peer(server.url, 1), bare(server.url)];
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
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rows: Record<string, unknown>[] = [];
  for (const [i, c] of contenders.entries()) {
    const cont = await contended(c, `c:${i}`, 25);
    rows.push({ contender: c.label, 'uncontended 1 w /s': Math.round(median(one[i])), 'uncontended 20 w /s': Math.round(median(twenty[i])), 'handoff p50 ms': +cont.p50.toFixed(2), 'handoff p99 ms': +cont.p99.toFixed(2), 'drain / ideal': +(cont.drainMs / cont.idealMs).toFixed(2) });
  }
  for (const c of contenders) await c.close();
  const floor = rows[rows.length - 1];
  const peerRow = rows[1];
  for (const r of rows) {
    r['1 w x redis-semaphore'] = +((r['uncontended 1 w /s'] as number) / (peerRow['uncontended 1 w /s'] as number)).toFixed(2);
    r['1 w x floor'] = +((r['uncontended 1 w /s'] as number) / (floor['uncontended 1 w /s'] as number)).toFixed(2);
    r['20 w x floor'] = +((r['uncontended 20 w /s'] as number) / (floor['uncontended 20 w /s'] as number)).toFixed(2);
  }
  console.table(rows);
  const perAcquisition = await commandsPerAcquisition(server.url, admin);
  console.log(`nest-redis-locks: ${perAcquisition.toFixed(2)} wire commands (script calls) per contended acquisition, release included`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/permits.json', JSON.stringify({ at: new Date().toISOString(), rows, commandsPerAcquisition: perAcquisition }, null, 2) + '\n');
} finally {
  await admin.quit();
  await server.stop();
}
