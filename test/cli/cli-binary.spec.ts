// The `nest-redis-locks` command as users get it: packed into a tarball, installed into a fresh project, run as
// node_modules/.bin/nest-redis-locks against real Redis (standalone and a 3-master Cluster).
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';
import { RedisCluster } from '../support/topologies.js';
import { until } from '../support/async.js';
import { installPackedCli } from '../support/cli-kit.js';
import type { CliRun, InstalledCli } from '../support/cli-kit.js';

const kit = new LockTestKit();
let cli: InstalledCli;
let project: string;
let bin: string;

type Run = CliRun;

/** Runs the installed binary; `input` is written to its stdin. */
function run(args: readonly string[], env: NodeJS.ProcessEnv = {}, input = ''): Promise<Run> {
  return cli.run(args, env, input);
}

/** Runs the binary on a pseudo-terminal (`script`), typing `typed`. */
function runOnTerminal(args: readonly string[], typed: string): Run {
  const started = performance.now();
  const quoted = [bin, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const out = spawnSync('script', ['-qec', quoted, '/dev/null'], { input: typed, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000 });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr, ms: performance.now() - started };
}

/** One line on stderr, no stack trace. */
function expectOneLineError(r: Run): void {
  const lines = r.stderr.trim().split('\n');
  expect(lines[0]).toMatch(/^nest-redis-locks: /);
  expect(r.stderr).not.toMatch(/^\s+at /m);
}

beforeAll(() => {
  cli = installPackedCli();
  project = cli.project;
  bin = cli.bin;
}, 120_000);

afterAll(() => cli?.remove());
afterEach(() => kit.closeAll());

describe('nest-redis-locks (installed from the packed tarball)', () => {
  it('answers --help and --version, and rejects bad usage with exit code 2 and one line', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('release <key> --force');
    const version = await run(['--version']);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    for (const args of [[], ['frobnicate'], ['inspect'], ['release', 'k'], ['list', '--url', 'http://x'], ['list', '--url', 'redis://a', '--url', 'redis://b'], ['list', '--timeout', 'soon']]) {
      const r = await run(args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 2]);
      expectOneLineError(r);
    }
  }, 60_000);

  it('lists, inspects and force-releases the locks of a standalone Redis', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const held = await engine.acquire('order:1');
    const read = await engine.acquire('order:2', { mode: 'read' });
    const other = await engine.acquire('user:1');
    const base = ['--url', redisUrl(), '--prefix', prefix];
    const list = await run(['list', ...base]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^lock\s+order:1\s+write\s/m);
    expect(list.stdout).toMatch(/^lock\s+order:2\s+read\s/m);
    expect(list.stdout).toContain(`:${process.pid}`);
    expect(list.stdout).toContain(`3 held under ${prefix}.`);
    const filtered = JSON.parse((await run(['list', 'order:', '--json', ...base], { REDIS_URL: redisUrl() })).stdout) as { entries: { key: string }[] };
    expect(filtered.entries.map((e) => e.key)).toEqual(['order:1', 'order:2']);
    const inspect = await run(['inspect', 'order:1', ...base]);
    expect(inspect.stdout).toContain(`lock order:1: write, fencing token ${held.fencingToken}`);
    expect((await run(['inspect', 'nothing:here', ...base])).stdout.trim()).toBe('nothing:here: not held');
    // Not a terminal and no --yes: refused, nothing released.
    const refused = await run(['release', 'order:1', '--force', ...base]);
    expect(refused.code).toBe(2);
    expectOneLineError(refused);
    expect(await engine.inspect('order:1')).not.toBeNull();
    const released = await run(['release', 'order:1', '--force', '--yes', '--json', ...base]);
    expect(JSON.parse(released.stdout)).toEqual({ key: 'order:1', released: true });
    expect(await engine.inspect('order:1')).toBeNull();
    await until(() => !held.isHeld, 15_000, 'the holder to find out');
    await Promise.all([read.release(), other.release()]);
  }, 60_000);

  it('asks on a terminal before a force release, and releases only on "yes"', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const lock = await engine.acquire('tty:1');
    const args = ['release', 'tty:1', '--force', '--url', redisUrl(), '--prefix', prefix];
    const no = runOnTerminal(args, 'no\n');
    expect(no.stdout).toContain('Force release lock "tty:1" (write by');
    expect(no.code).toBe(1);
    expect(await engine.inspect('tty:1')).not.toBeNull();
    const yes = runOnTerminal(args, 'yes\n');
    expect(yes.code).toBe(0);
    expect(yes.stdout).toContain('released "tty:1"');
    expect(await engine.inspect('tty:1')).toBeNull();
    await lock.release();
  }, 60_000);

  it('fails with exit code 1 and one line, in bounded time, when Redis cannot be reached', async () => {
    const server = await kit.server();
    await server.stop();
    const r = await run(['list', '--url', server.url, '--timeout', '500']);
    expect(r.code).toBe(1);
    expectOneLineError(r);
    expect(r.stderr).toContain(`cannot reach Redis at 127.0.0.1:${server.port}: connect ECONNREFUSED`);
    expect(r.ms).toBeLessThan(10_000);
  }, 60_000);

  it('watch redraws until Ctrl-C (SIGINT), then exits 0', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const lock = await engine.acquire('watched:1');
    const child = spawn(bin, ['watch', '--json', '--interval', '200', '--url', redisUrl(), '--prefix', prefix], { cwd: project, env: { ...process.env, NODE_OPTIONS: '' } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await until(() => out.split('\n').filter(Boolean).length >= 3, 15_000, 'three refreshes');
    const snapshots = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { entries: { key: string }[] });
    expect(snapshots[0].entries.map((e) => e.key)).toEqual(['watched:1']);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await lock.release();
  }, 60_000);

  it('lists and releases the locks of every master of a Redis Cluster', async () => {
    const cluster = await RedisCluster.start(kit);
    const client = cluster.client();
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ redis: client, keyPrefix: prefix });
    const keys = Array.from({ length: 12 }, (_, i) => `shard:${i}`);
    const handles = await Promise.all(keys.map((k) => engine.acquire(k)));
    const masters = new Set(await Promise.all(keys.map(async (k) => (await cluster.masterFor(`${prefix}{${k}}`)).port)));
    expect(masters.size).toBe(3);
    const [node] = cluster.nodes;
    const base = ['--cluster', '--url', `redis://${node.host}:${node.port}`, '--prefix', prefix];
    const list = JSON.parse((await run(['list', '--json', ...base])).stdout) as { entries: { key: string }[]; complete: boolean };
    expect(list.entries.map((e) => e.key)).toEqual([...keys].sort());
    expect(list.complete).toBe(true);
    const released = await run(['release', 'shard:7', '--force', '--yes', ...base]);
    expect(released.stdout.trim()).toBe('released "shard:7"');
    expect(await engine.inspect('shard:7')).toBeNull();
    await Promise.all(handles.filter((h) => h.key !== 'shard:7').map((h) => h.release()));
  }, 120_000);
});
