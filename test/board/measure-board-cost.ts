// `npm run measure:board`: what one board snapshot costs Redis with many held locks (docs/board.md). Starts its own
// redis-server, creates LOCKS single-holder locks in the form an uncontended acquisition leaves (one hash with its
// expiry), then takes snapshots as the board does and reads INFO commandstats around them.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import { BOARD_KINDS } from '../../lib/read-model/kinds.js';
import { BoardSnapshots } from '../../lib/read-model/snapshots.js';
import { DEFAULT_LOCK_BOARD_SETTINGS } from '../../lib/board/lock-board-options.js';
import { startRedisServer } from '../../tools/redis-server.mjs';

const LOCKS = Number(process.env.LOCKS ?? 100_000);
const ROUNDS = 5;

async function stats(redis: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const out = new Map<string, { calls: number; usec: number }>();
  for (const [, name, calls, usec] of (await redis.info('commandstats')).matchAll(
    /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm,
  )) {
    out.set(name, { calls: Number(calls), usec: Number(usec) });
  }
  return out;
}

async function main(): Promise<void> {
  const server = await startRedisServer();
  const redis = new Redis(server.url);
  const engine = new LockEngine({ redis: server.url, logger: { warn: () => undefined, error: () => undefined } });
  try {
    const started = performance.now();
    const now = Date.now();
    for (let i = 0; i < LOCKS; i += 10_000) {
      const pipeline = redis.pipeline();
      for (let j = i; j < Math.min(LOCKS, i + 10_000); j++) {
        const fence = String(now * 1000 + j);
        const state = `lock:{load:${j}}`;
        pipeline.hset(state, `h:t${j}`, `1|1|${fence}|${now}|loadhost|4242|load|o${j}:1`, 'f', fence, 'w', `t${j}`);
        pipeline.pexpire(state, 3_600_000);
      }
      await pipeline.exec();
    }
    console.log(
      `created ${LOCKS} locks in ${Math.round(performance.now() - started)} ms; dbsize ${await redis.dbsize()}; used_memory ${/used_memory_human:(\S+)/.exec(await redis.info('memory'))?.[1]}`,
    );
    const settings = {
      refreshMs: 1,
      maxKeys: DEFAULT_LOCK_BOARD_SETTINGS.maxKeys,
      scanCount: DEFAULT_LOCK_BOARD_SETTINGS.scanCount,
      scanBudgetMs: DEFAULT_LOCK_BOARD_SETTINGS.scanBudgetMs,
      holdWarningMs: 60_000,
      waitWarningMs: 5_000,
      kinds: BOARD_KINDS,
    };
    const rows: string[] = [
      '| snapshot | wall ms (median) | found | read | complete | SCAN calls | Redis µs: SCAN | Redis µs: INSPECT (EVALSHA) | Redis µs total |',
      '|---|---|---|---|---|---|---|---|---|',
    ];
    for (const [label, filter, maxKeys] of [
      ['all, default maxKeys', '', settings.maxKeys],
      ['all, maxKeys 50', '', 50],
      ['filter matching 11 keys', 'load:4242', settings.maxKeys],
    ] as const) {
      const snapshots = new BoardSnapshots(engine, { ...settings, maxKeys });
      await snapshots.get(filter); // warm-up (script load)
      await redis.config('RESETSTAT');
      const walls: number[] = [];
      let last;
      for (let r = 0; r < ROUNDS; r++) {
        // Past refreshMs before each round: every round takes a snapshot of its own (not the warm-up's, cached).
        await new Promise((res) => setTimeout(res, 5));
        const t = performance.now();
        last = await snapshots.get(filter);
        walls.push(performance.now() - t);
      }
      const s = await stats(redis);
      const per = (name: string) => Math.round((s.get(name)?.usec ?? 0) / ROUNDS);
      const scanCalls = Math.round((s.get('scan')?.calls ?? 0) / ROUNDS);
      // Commands the board sends itself (a script's own commands are inside its EVALSHA time: not counted twice; the
      // one TIME per master is left out, as scripts call TIME too).
      const sent = ['scan', 'evalsha', 'eval', 'zrange'];
      const total = [...s.entries()].filter(([n]) => sent.includes(n)).reduce((sum, [, v]) => sum + v.usec, 0) / ROUNDS;
      walls.sort((a, b) => a - b);
      rows.push(
        `| ${label} | ${Math.round(walls[Math.floor(ROUNDS / 2)])} | ${last?.found} | ${last?.entries.length} | ${last?.complete} | ${scanCalls} | ${per('scan')} | ${per('evalsha')} | ${Math.round(total)} |`,
      );
    }
    console.log(rows.join('\n'));
  } finally {
    await engine.close();
    await redis.quit();
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
