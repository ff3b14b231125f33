import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { freePort, startRedisServer } from '../../tools/redis-server.mjs';
import type { RedisServerProcess } from '../../tools/redis-server.mjs';
import { until } from '../support/async.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = join(ROOT, 'dist-sample/sample-app/main.js');
const INSTANCES = 3;
const REQUESTS = 300;

/** Newest modification time (ms) of the files under `dir` that end with `suffix`. */
function newestMtime(dir: string, suffix: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(suffix)) continue;
    newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Compiles the sample app to dist-sample/ unless the build there is newer than every source it comes from. */
function buildSampleApp(): void {
  let built = 0;
  try {
    built = statSync(MAIN).mtimeMs;
  } catch {
    // not built yet
  }
  const sources = Math.max(
    newestMtime(join(ROOT, 'lib'), '.ts'),
    newestMtime(join(ROOT, 'sample-app'), '.ts'),
    statSync(join(ROOT, 'tsconfig.json')).mtimeMs,
    statSync(join(ROOT, 'tsconfig.sample.json')).mtimeMs,
  );
  if (built > sources) return;
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const out = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.sample.json'], { cwd: ROOT, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`building the sample app failed:\n${out.stdout}${out.stderr}`);
}

/** One sample-app process. */
interface Instance {
  readonly url: string;
  readonly child: ChildProcess;
  /** The last lines it printed, for failure messages. */
  output(): string;
}

function startInstance(port: number, redisUrl: string): Instance {
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), REDIS_URL: redisUrl, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { url: `http://127.0.0.1:${port}`, child, output: () => log };
}

/** Resolves once `instance` answers HTTP; rejects if it exits or takes longer than `withinMs`. */
async function waitUntilAnswering(instance: Instance, withinMs = 20_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (instance.child.exitCode !== null || instance.child.signalCode !== null) {
      throw new Error(`sample app at ${instance.url} exited (${instance.child.exitCode ?? instance.child.signalCode}):\n${instance.output()}`);
    }
    try {
      const res = await fetch(`${instance.url}/locks/ready-check`);
      if (res.ok) {
        await res.json();
        return;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`sample app at ${instance.url} did not answer in ${withinMs} ms:\n${instance.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** SIGTERM (the app has shutdown hooks), then SIGKILL if it is still running after 3 s. */
function stopInstance(instance: Instance): Promise<void> {
  const { child } = instance;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

/** Sends `count` POSTs to `path` at once, spread round-robin over the instances; returns the answers. */
async function hammer(instances: readonly Instance[], path: string, count: number): Promise<{ status: number; likes: number }[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await fetch(`${instances[i % instances.length].url}${path}`, { method: 'POST' });
      const body = (await res.json()) as { likes: number };
      return { status: res.status, likes: body.likes };
    }),
  );
}

describe(`sample app: ${INSTANCES} processes, one Redis`, () => {
  let server: RedisServerProcess | undefined;
  let redis: Redis | undefined;
  const instances: Instance[] = [];

  beforeAll(async () => {
    buildSampleApp();
    server = await startRedisServer();
    redis = new Redis(server.url);
    for (let i = 0; i < INSTANCES; i++) instances.push(startInstance(await freePort(), server.url));
    await Promise.all(instances.map((instance) => waitUntilAnswering(instance)));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(instances.map(stopInstance));
    await redis?.quit();
    await server?.stop();
  }, 20_000);

  it(`counts exactly ${REQUESTS} likes from ${REQUESTS} concurrent POST /articles/1/likes over all processes`, async () => {
    const created = await fetch(`${instances[0].url}/articles/1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Locks', body: 'on Redis' }),
    });
    expect(created.status).toBe(200);

    const answers = await hammer(instances, '/articles/1/likes', REQUESTS);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    // Each request saw a different count: no two read-modify-writes interleaved.
    const seen = answers.map((a) => a.likes).sort((a, b) => a - b);
    expect(seen).toEqual(Array.from({ length: REQUESTS }, (_, i) => i + 1));

    const article = (await (await fetch(`${instances[2].url}/articles/1`)).json()) as { likes: number };
    expect(article.likes).toBe(REQUESTS);
    expect(await redis!.get('articles:1:likes')).toBe(String(REQUESTS));
    // Every lock was given back.
    const lock = (await (await fetch(`${instances[1].url}/locks/article:1`)).json()) as { held?: boolean };
    expect(lock).toEqual({ key: 'article:1', held: false });
    // A key the library refuses is the client's mistake: 400 naming the problem, not 500.
    const bad = await fetch(`${instances[1].url}/locks/%7Dx`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toContain("cannot start with '}'");
  }, 30_000);

  it(`loses updates without the lock: ${REQUESTS} concurrent POST /articles/2/unsafe-likes end below ${REQUESTS}`, async () => {
    const answers = await hammer(instances, '/articles/2/unsafe-likes', REQUESTS);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    const final = Number(await redis!.get('articles:2:likes'));
    expect(final).toBeGreaterThan(0);
    expect(final).toBeLessThan(REQUESTS);
  }, 30_000);

  it('runs at most 2 exports at once over all processes (@Semaphore, limit 2), and every one of them', async () => {
    const count = 12;
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const res = await fetch(`${instances[i % instances.length].url}/articles/${i}/export`, { method: 'POST' });
        return { status: res.status, body: (await res.json()) as { running: number } };
      }),
    );
    const elapsed = performance.now() - started;
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    const stats = (await (await fetch(`${instances[0].url}/articles/exports/stats`)).json()) as { maxRunning: number; done: number };
    // Two at once, never three; all twelve ran; so at least six rounds of ~200 ms.
    expect(stats).toEqual({ maxRunning: 2, done: count });
    expect(Math.max(...answers.map((a) => a.body.running))).toBe(2);
    expect(elapsed).toBeGreaterThanOrEqual((count / 2) * 200 - 50);
    expect(await redis!.keys('lock:{article-exports}*')).toEqual([]);
  }, 30_000);

  it('runs the @Cron digest job (every 10 s) once per fire over all processes', async () => {
    const runs = async () => {
      const keys = await redis!.keys('digest:*:runs');
      return Promise.all(keys.map(async (key) => `${key}=${await redis!.get(key)}`));
    };
    await until(async () => (await runs()).length > 0, 12_000, 'a digest fire');
    // A fire's runs are counted as the run ends: look again once every run of it has ended.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await runs()).filter((r) => !r.endsWith('=1'))).toEqual([]);
  }, 20_000);
});
