import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { until } from '../support/async.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The sample as `npm start` runs it: compiled by `npm run build:sample`. */
const MAIN = fileURLToPath(new URL('../../dist-sample/sample-app/main.js', import.meta.url));

/** Whether process `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The redis-server the sample started (a child of `pid`) and its `--dir`. */
function ownRedisServer(pid: number): { pid: number; dir: string } | undefined {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  for (const child of children) {
    const args = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0');
    if (!args[0].includes('redis-server')) continue;
    // Its --dir argument while its command line still shows it; redis-server retitles itself after moving into it.
    const at = args.indexOf('--dir');
    return { pid: child, dir: at >= 0 ? args[at + 1] : readlinkSync(`/proc/${child}/cwd`) };
  }
  return undefined;
}

describe('the sample app cleans up after itself', () => {
  beforeAll(() => {
    execFileSync(
      process.execPath,
      [fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.sample.json'],
      { cwd: ROOT },
    );
  }, 120_000);

  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    '%s to its PID: its own redis-server is stopped and its folder removed',
    async (signal) => {
      const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
      delete env.NODE_OPTIONS;
      delete env.REDIS_URL; // it starts a redis-server of its own
      const app = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      app.stdout.on('data', (d: Buffer) => (output += d.toString()));
      app.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => app.once('exit', (code) => resolve(code)));
      try {
        await until(() => output.includes('articles sample listening'), 30_000, `the sample to listen:\n${output}`);
        const server = ownRedisServer(app.pid!);
        expect(server).toBeDefined();
        expect(existsSync(server!.dir)).toBe(true);
        process.kill(app.pid!, signal);
        await exited;
        await until(() => !alive(server!.pid), 5_000, 'its redis-server to stop');
        expect(existsSync(server!.dir)).toBe(false);
      } finally {
        if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
      }
    },
    60_000,
  );

  it('SIGTERM while it is still starting (its redis-server just started): the redis-server is stopped all the same', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
    delete env.NODE_OPTIONS;
    delete env.REDIS_URL;
    const app = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    app.stdout.on('data', (d: Buffer) => (output += d.toString()));
    app.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => app.once('exit', (code) => resolve(code)));
    try {
      let server: { pid: number; dir: string } | undefined;
      await until(
        () => (server = alive(app.pid!) ? ownRedisServer(app.pid!) : undefined) !== undefined,
        30_000,
        `its redis-server:\n${output}`,
      );
      process.kill(app.pid!, 'SIGTERM'); // before Nest has started: the window where no handler used to be set
      await exited;
      expect(output).not.toContain('articles sample listening');
      await until(() => !alive(server!.pid), 5_000, 'its redis-server to stop');
      expect(existsSync(server!.dir)).toBe(false);
    } finally {
      if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
    }
  }, 60_000);
});
