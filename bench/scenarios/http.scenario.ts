import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { BenchConfig } from '../config.js';
import type { Log } from '../support/log.js';
import { freePort } from '../support/ports.js';
import type { RedisStats } from '../support/redis-stats.js';
import { median, sleep } from '../support/samples.js';

type VariantId = 'unlocked-fresh' | 'locked' | 'unlocked';

interface Variant {
  readonly id: VariantId;
  readonly label: string;
  readonly base: string;
}

const UNLOCKED_BASE = '/bench-unlocked/articles';
const LOCKED_BASE = '/articles';

const VARIANTS: readonly Variant[] = [
  {
    id: 'unlocked-fresh',
    label: 'PUT without @WriteLocked, before any lock was taken in the process',
    base: UNLOCKED_BASE,
  },
  { id: 'locked', label: "PUT /articles/:id with @WriteLocked('article:<id>')", base: LOCKED_BASE },
  { id: 'unlocked', label: 'PUT without @WriteLocked, after locks were taken in the process', base: UNLOCKED_BASE },
];

export interface HttpRun {
  readonly requestsPerSec: number;
  /** CPU of the app process (user + system) per request, in milliseconds (NaN where /proc is not available). */
  readonly appCpuMsPerRequest: number;
  /** CPU of the app process, as % of one core. */
  readonly appCpuPct: number;
  /** redis-server CPU per request, in milliseconds. */
  readonly redisCpuMsPerRequest: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
}

export interface HttpRow extends HttpRun {
  readonly id: VariantId;
  readonly label: string;
  readonly reps: readonly HttpRun[];
}

export interface HttpResult {
  readonly connections: number;
  readonly durationS: number;
  readonly articles: number;
  readonly rows: readonly HttpRow[];
  /** Locked requests/s as a fraction of unlocked requests/s in a process that never took a lock (the target). */
  readonly lockedToUnlocked: number;
  /** Locked requests/s as a fraction of unlocked requests/s in the same process after locks were taken. */
  readonly lockedToUnlockedSameState: number;
}

async function startApp(redisUrl: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const entry = fileURLToPath(new URL('../http/bench-app.js', import.meta.url));
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, REDIS_URL: redisUrl, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`bench app did not start in 20 s: ${out}`)), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bench app exited with code ${code}: ${out}`));
    });
  });
  return { child, port };
}

async function stopApp(child: ChildProcess): Promise<void> {
  // Requests autocannon abandoned at the end of a run are still being served: let them finish first.
  await sleep(1_000);
  await new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
  });
}

/** CPU time (user + system) a process has used, in milliseconds, from /proc (Linux); NaN elsewhere. */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, fields 14 and 15 of /proc/<pid>/stat, are the 12th and 13th after "(comm) ", in 1/100 s.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

class Loader {
  private n = 0;

  constructor(
    private readonly app: { readonly child: ChildProcess; readonly port: number },
    private readonly config: BenchConfig['http'],
    private readonly stats: RedisStats,
  ) {}

  async run(base: string, durationS: number): Promise<HttpRun> {
    const pid = this.app.child.pid!;
    const cpu0 = processCpuMs(pid);
    const redis0 = await this.stats.cpuSeconds();
    const t0 = performance.now();
    const result = await autocannon({
      url: `http://127.0.0.1:${this.app.port}`,
      connections: this.config.connections,
      duration: durationS,
      headers: { 'content-type': 'application/json' },
      requests: [
        {
          method: 'PUT',
          body: JSON.stringify({ title: 'bench', body: 'a benchmark update' }),
          // A different article on each request: the lock is taken and released every time, contention is rare.
          setupRequest: (req) => ({ ...req, path: `${base}/${this.n++ % this.config.articles}` }),
        },
      ],
    });
    const cpuMs = processCpuMs(pid) - cpu0;
    const redisMs = ((await this.stats.cpuSeconds()) - redis0) * 1000;
    const wallMs = performance.now() - t0;
    return {
      requestsPerSec: result.requests.average,
      appCpuMsPerRequest: cpuMs / result.requests.total,
      appCpuPct: (cpuMs / wallMs) * 100,
      redisCpuMsPerRequest: redisMs / result.requests.total,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
    };
  }
}

/**
 * Scenario 6: the sample app's PUT /articles/:id with and without @WriteLocked, under autocannon. Each repetition
 * starts a fresh app process: the unlocked route is measured first, before the process ever took a lock (as an app
 * without the decorator would run), then the locked route and the unlocked route again, in alternating order.
 */
export async function runHttp(config: BenchConfig, url: string, stats: RedisStats, log: Log): Promise<HttpResult> {
  const { connections, warmupS, durationS, articles } = config.http;
  const runs = new Map<VariantId, HttpRun[]>(VARIANTS.map((v) => [v.id, []]));
  for (let rep = 0; rep < config.reps; rep++) {
    const app = await startApp(url);
    const kill = () => app.child.kill('SIGKILL');
    process.once('exit', kill);
    try {
      const loader = new Loader(app, config.http, stats);
      const measure = async (v: Variant) => {
        await loader.run(v.base, warmupS);
        const run = await loader.run(v.base, durationS);
        if (run.non2xx > 0 || run.errors > 0)
          throw new Error(`HTTP ${v.id}: ${run.non2xx} non-2xx answers, ${run.errors} errors`);
        runs.get(v.id)!.push(run);
        log(`http rep ${rep + 1}/${config.reps} ${v.id}: ${Math.round(run.requestsPerSec)} req/s`);
      };
      const [fresh, locked, unlocked] = VARIANTS;
      await measure(fresh);
      if (rep % 2 === 0) {
        await measure(locked);
        await measure(unlocked);
      } else {
        await loader.run(LOCKED_BASE, warmupS);
        await measure(unlocked);
        await measure(locked);
      }
    } finally {
      process.off('exit', kill);
      await stopApp(app.child);
      await stats.flush();
    }
  }
  const rows: HttpRow[] = VARIANTS.map((v) => {
    const rs = runs.get(v.id)!;
    const med = (f: (r: HttpRun) => number) => median(rs.map(f));
    return {
      id: v.id,
      label: v.label,
      requestsPerSec: med((r) => r.requestsPerSec),
      appCpuMsPerRequest: med((r) => r.appCpuMsPerRequest),
      appCpuPct: med((r) => r.appCpuPct),
      redisCpuMsPerRequest: med((r) => r.redisCpuMsPerRequest),
      p50Ms: med((r) => r.p50Ms),
      p99Ms: med((r) => r.p99Ms),
      non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      reps: rs,
    };
  });
  const rate = (id: VariantId) => rows.find((r) => r.id === id)!.requestsPerSec;
  return {
    connections,
    durationS,
    articles,
    rows,
    lockedToUnlocked: rate('locked') / rate('unlocked-fresh'),
    lockedToUnlockedSameState: rate('locked') / rate('unlocked'),
  };
}
