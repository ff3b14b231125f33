// Interleaved A/B of the uncontended cycle, for comparing builds of the library on a busy, shared machine:
//
//   npm run bench -- --only=uncontended --quick   # or `npx tsc -p tsconfig.bench.json`: builds dist-bench/
//   node bench/interleaved-ab.mjs --builds=old=/tmp/old-tree/dist-bench,new=dist-bench [--workers=1,50] [--rounds=8] [--slice-ms=700]
//
// Every build's LockEngine, bare (SET NX PX + Lua compare-and-delete) and redis-semaphore's Mutex run in one process
// against one throwaway redis-server, in short slices that alternate (order reversed every other round) for
// `rounds` rounds after a warm-up round. Each slice's rate is divided by the bare slice of the same round, so a
// drift of the machine's load hits every contender alike; the medians over the rounds are printed, with Node and
// Redis CPU per cycle. The full bench (`npm run bench`) stays the reference; this is for quick old/new decisions.
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { startRedisServer } from '../tools/redis-server.mjs';

const arg = (name, fallback) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const builds = arg('builds', '')
  .split(',')
  .filter(Boolean)
  .map((b) => {
    const [name, dir] = b.split('=');
    return { name, entry: pathToFileURL(resolve(dir, 'lib/index.js')).href };
  });
if (builds.length === 0) {
  console.error(
    'usage: node bench/interleaved-ab.mjs --builds=name=<dist-bench dir>[,name=<dir>...] [--workers=1,50] [--rounds=8] [--slice-ms=700]',
  );
  process.exit(2);
}
const workerCounts = arg('workers', '1,50').split(',').map(Number);
const rounds = Number(arg('rounds', '8'));
const sliceMs = Number(arg('slice-ms', '700'));

const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const server = await startRedisServer();
try {
  const admin = new Redis(server.url);
  const contenders = [];
  const bareClient = new Redis(server.url);
  const sha = await bareClient.script('LOAD', COMPARE_AND_DELETE);
  contenders.push({
    id: 'bare',
    cycle: async (key) => {
      const token = randomUUID();
      while ((await bareClient.set(key, token, 'PX', 30_000, 'NX')) !== 'OK') {
        // taken: try again
      }
      await bareClient.evalsha(sha, 1, key, token);
    },
    close: () => bareClient.quit(),
  });
  const semaphoreClient = new Redis(server.url);
  contenders.push({
    id: 'semaphore',
    cycle: async (key) => {
      const mutex = new Mutex(semaphoreClient, key);
      await mutex.acquire();
      await mutex.release();
    },
    close: () => semaphoreClient.quit(),
  });
  for (const { name, entry } of builds) {
    const { LockEngine } = await import(entry);
    const engine = new LockEngine({ redis: server.url, keyPrefix: `ab:${name}:` });
    contenders.push({
      id: name,
      cycle: async (key) => {
        const handle = await engine.acquire(key);
        await handle.release();
      },
      close: () => engine.close(),
    });
  }

  const redisCpuUs = async () => {
    const info = await admin.info('cpu');
    return (Number(/used_cpu_user:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])) * 1e6;
  };

  for (const workers of workerCounts) {
    const samples = new Map(contenders.map((c) => [c.id, { rate: [], ratio: [], node: [], redis: [] }]));
    for (let round = 0; round <= rounds; round++) {
      const order = round % 2 ? [...contenders].reverse() : contenders;
      const rates = new Map();
      for (const c of order) {
        let cycles = 0;
        const redis0 = await redisCpuUs();
        const cpu0 = process.cpuUsage();
        const start = performance.now();
        const end = start + sliceMs;
        await Promise.all(
          Array.from({ length: workers }, async (_, i) => {
            const key = `ab:${c.id}:${workers}:k${i}`;
            while (performance.now() < end) {
              await c.cycle(key);
              cycles++;
            }
          }),
        );
        const elapsed = performance.now() - start;
        const cpu = process.cpuUsage(cpu0);
        const redisUs = (await redisCpuUs()) - redis0;
        if (round === 0) continue; // warm-up
        const s = samples.get(c.id);
        rates.set(c.id, (cycles / elapsed) * 1000);
        s.rate.push((cycles / elapsed) * 1000);
        s.node.push((cpu.user + cpu.system) / cycles);
        s.redis.push(redisUs / cycles);
      }
      if (round > 0) for (const c of contenders) samples.get(c.id).ratio.push(rates.get(c.id) / rates.get('bare'));
    }
    console.log(`\n${workers} worker(s), ${rounds} rounds of ${sliceMs} ms slices (medians)`);
    console.log('contender        cycles/s   × bare   Node µs/cycle   Redis µs/cycle');
    for (const c of contenders) {
      const s = samples.get(c.id);
      console.log(
        `${c.id.padEnd(14)} ${median(s.rate).toFixed(0).padStart(10)}   ${median(s.ratio).toFixed(2)}×   ${median(s.node).toFixed(1).padStart(13)}   ${median(s.redis).toFixed(1).padStart(14)}`,
      );
    }
  }
  for (const c of contenders) await c.close();
  await admin.quit();
} finally {
  await server.stop();
}
