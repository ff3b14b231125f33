// `node --import ./test/support/register-ts.mjs bench/permits-profile.ts`: where an uncontended permit cycle's time
// goes, one worker, beside redis-semaphore's Semaphore and the bare floor of bench/permits.ts, in interleaved slices
// (order reversed every other round): wall time, this process's CPU and Redis's time per cycle. Redis time is the
// `usec` INFO commandstats gives the commands sent (a script's includes the commands it runs), and the server's CPU
// (INFO cpu). Prints medians over the rounds; not part of `npm test`.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { LockEngine } from '../lib/locking/engine/lock-engine.js';
import { startRedisServer } from '../tools/redis-server.mjs';

type Cycle = (key: string) => Promise<void>;
const BARE_ACQUIRE = `if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then redis.call('ZADD', KEYS[1], 0, ARGV[1]) return 1 end return 0`;

const server = await startRedisServer();
const admin = new Redis(server.url);
const engine = new LockEngine({ redis: server.url, keyPrefix: 'prof:' });
const client = new Redis(server.url);
let n = 0;
const contenders: { label: string; cycle: Cycle }[] = [
  { label: 'withPermit', cycle: (key) => engine.withPermit(key, async () => undefined, { limit: 3 }) },
  {
    label: 'redis-semaphore',
    cycle: async (key) => {
      const s = new Semaphore(client, `rs:${key}`, 3);
      await s.acquire();
      await s.release();
    },
  },
  {
    label: 'bare',
    cycle: async (key) => {
      const token = String(++n);
      await client.eval(BARE_ACQUIRE, 1, `bare:${key}`, token, 3);
      await client.zrem(`bare:${key}`, token);
    },
  },
];

async function redisUsec(): Promise<{ commands: number; cpu: number }> {
  const stats = await admin.info('commandstats');
  let commands = 0;
  for (const [, name, usec] of stats.matchAll(/^cmdstat_([\w|]+):calls=\d+,usec=(\d+)/gm))
    if (['evalsha', 'eval', 'zrem'].includes(name)) commands += Number(usec);
  const cpu = await admin.info('cpu');
  const f = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return { commands, cpu: (f('used_cpu_user') + f('used_cpu_sys')) * 1e6 };
}

const rows = contenders.map(() => ({
  wall: [] as number[],
  node: [] as number[],
  redis: [] as number[],
  redisCpu: [] as number[],
}));
for (const c of contenders) for (let i = 0; i < 300; i++) await c.cycle('warm');
for (let round = 0; round < 8; round++) {
  const order = round % 2 ? [...contenders.keys()].reverse() : [...contenders.keys()];
  for (const i of order) {
    const cycles = 1_000;
    await admin.config('RESETSTAT');
    const r0 = await redisUsec();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let k = 0; k < cycles; k++) await contenders[i].cycle('k');
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const r1 = await redisUsec();
    rows[i].wall.push((wall * 1000) / cycles);
    rows[i].node.push((cpu.user + cpu.system) / cycles);
    rows[i].redis.push((r1.commands - r0.commands) / cycles);
    rows[i].redisCpu.push((r1.cpu - r0.cpu) / cycles);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.table(
  contenders.map((c, i) => ({
    contender: c.label,
    'wall µs/cycle': Math.round(median(rows[i].wall)),
    'node CPU µs/cycle': Math.round(median(rows[i].node)),
    'redis command µs/cycle': +median(rows[i].redis).toFixed(1),
    'redis server CPU µs/cycle': Math.round(median(rows[i].redisCpu)),
  })),
);
await engine.close();
client.disconnect();
admin.disconnect();
await server.stop();
