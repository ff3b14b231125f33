import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { freePort } from '../../tools/redis-server.mjs';
import { until } from '../support/async.js';

const MAIN = fileURLToPath(new URL('../../sample-app/main.ts', import.meta.url));
const REGISTER_TS = fileURLToPath(new URL('../support/register-ts.mjs', import.meta.url));

/** Whether a process with this pid exists (a zombie counts: nobody reaped it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('sample app: stopped by a signal to its pid, it leaves nothing behind', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  });

  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)('%s: no redis-server of its own still running, no temp folder', async (signal) => {
    // The app's temp folders (its redis-server's working directory) go under a TMPDIR of this test's own.
    const tmp = mkdtempSync(join(tmpdir(), 'sample-shutdown-'));
    cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(await freePort()), TMPDIR: tmp };
    delete env.REDIS_URL; // so that it starts a redis-server of its own, as `npm start` does
    delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the app
    const app = spawn(process.execPath, ['--import', REGISTER_TS, MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    app.stdout.on('data', (d: Buffer) => (log += d.toString()));
    app.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      app.once('exit', (code, sig) => resolve({ code, signal: sig })),
    );
    cleanups.push(() => app.kill('SIGKILL'));

    await until(() => log.includes('listening on') || app.exitCode !== null, 30_000, `the sample to listen; its log:\n${log}`);
    const url = /started a redis-server of its own at (redis:\/\/[\d.]+:\d+)/.exec(log)?.[1];
    expect(url).toBeDefined();
    const redis = new Redis(url!, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await redis.connect();
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    redis.disconnect();
    cleanups.push(() => {
      if (alive(redisPid)) process.kill(redisPid, 'SIGKILL');
    });
    expect(alive(redisPid)).toBe(true);
    expect(readdirSync(tmp)).not.toEqual([]);

    // Locked requests work, then the process is stopped by pid, as a process manager or `docker stop` does.
    const port = env.PORT!;
    const like = await fetch(`http://127.0.0.1:${port}/articles/1/likes`, { method: 'POST' });
    expect(await like.json()).toEqual({ likes: 1 });
    app.kill(signal);
    const how = await exited;
    expect(how.code === 0 || how.signal === signal).toBe(true);

    await until(() => !alive(redisPid), 3_000, `redis-server ${redisPid} to be gone after the app exited`).catch(() => undefined);
    expect({ redisServerRunning: alive(redisPid), leftInTmp: readdirSync(tmp) }).toEqual({ redisServerRunning: false, leftInTmp: [] });
  }, 60_000);
});
