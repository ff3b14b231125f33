import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { freePort, startRedisServer } from '../../tools/redis-server.mjs';
import type { RedisServerProcess } from '../../tools/redis-server.mjs';
import { until } from '../support/async.js';
import { keysUnder } from '../support/redis.js';
import {
  buildSampleApp,
  startSampleInstance as startInstance,
  stopSampleInstance as stopInstance,
  waitUntilAnswering,
} from '../support/sample-app.js';
import type { SampleInstance as Instance } from '../support/sample-app.js';

const INSTANCES = 3;
const REQUESTS = 300;

/** Sends `count` POSTs to `path` at once, spread round-robin over the instances; returns the answers. */
async function hammer(
  instances: readonly Instance[],
  path: string,
  count: number,
): Promise<{ status: number; likes: number }[]> {
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
    const stats = (await (await fetch(`${instances[0].url}/articles/exports/stats`)).json()) as {
      maxRunning: number;
      done: number;
    };
    // Two at once, never three; all twelve ran; so at least six rounds of ~200 ms.
    expect(stats).toEqual({ maxRunning: 2, done: count });
    expect(Math.max(...answers.map((a) => a.body.running))).toBe(2);
    expect(elapsed).toBeGreaterThanOrEqual((count / 2) * 200 - 50);
    expect(await keysUnder(redis!, 'lock:{article-exports}')).toEqual([]); // its fence tombstone expires by itself
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
