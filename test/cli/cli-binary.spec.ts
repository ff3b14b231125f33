// The `nest-redis-locks` command as users get it: packed into a tarball, installed into a fresh project, run as
// node_modules/.bin/nest-redis-locks against real Redis (standalone and a 3-master Cluster).
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, redisServerTlsSupport } from '../../tools/redis-server.mjs';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';
import { RedisCluster } from '../support/topologies.js';
import { until } from '../support/async.js';
import { installPackedCli } from '../support/cli-kit.js';
import type { CliRun, InstalledCli } from '../support/cli-kit.js';

const kit = new LockTestKit();
const noTls = redisServerTlsSupport();
if (noTls) console.warn(`CLI TLS test skipped: ${noTls}`);
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
  const out = spawnSync('script', ['-qec', quoted, '/dev/null'], {
    input: typed,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 30_000,
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr, ms: performance.now() - started };
}

/** One line on stderr (a usage error ends with the pointer to --help), no stack trace. */
function expectOneLineError(r: Run): void {
  expect(r.stderr).toMatch(/^nest-redis-locks: [^\n]+\n$/);
  if (r.code === 2) expect(r.stderr).toMatch(/ \(see --help\)\n$/);
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
    for (const args of [
      [],
      ['frobnicate'],
      ['inspect'],
      ['release', 'k'],
      ['list', '--url', 'http://x'],
      ['list', '--url', 'redis://a', '--url', 'redis://b'],
      ['list', '--timeout', 'soon'],
    ]) {
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
    const filtered = JSON.parse(
      (await run(['list', 'order:', '--json', ...base], { REDIS_URL: redisUrl() })).stdout,
    ) as { entries: { key: string }[] };
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

  it.each([
    ['PING', '-ping'],
    ['SCAN', '-scan'],
  ])(
    'says "permission denied (NOPERM …)" when the ACL user may not run %s, not that Redis cannot be reached',
    async (_, rule) => {
      const server = await kit.server();
      const admin = kit.redis(server.url);
      await admin.call('ACL', 'SETUSER', 'limited', 'on', '>pw', '~*', '&*', '+@all', rule);
      const url = new URL(server.url);
      url.username = 'limited';
      url.password = 'pw';
      const r = await run(['list', '--url', url.toString(), '--timeout', '1000']);
      expect(r.code).toBe(1);
      expectOneLineError(r);
      expect(r.stderr).toMatch(/permission denied \(NOPERM [^)]*\)/);
      expect(r.stderr).not.toMatch(/cannot reach|cannot be reached/);
    },
    60_000,
  );

  it('watch redraws until Ctrl-C (SIGINT), then exits 0', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const lock = await engine.acquire('watched:1');
    const child = spawn(bin, ['watch', '--json', '--interval', '200', '--url', redisUrl(), '--prefix', prefix], {
      cwd: project,
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await until(() => out.split('\n').filter(Boolean).length >= 3, 15_000, 'three refreshes');
    const snapshots = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { entries: { key: string }[] });
    expect(snapshots[0].entries.map((e) => e.key)).toEqual(['watched:1']);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await lock.release();
  }, 60_000);

  it('connects to REDIS_URL alone (no --url) with the default prefix lock:, and inspect --json gives the entry or null', async () => {
    // A redis-server of the test's own: other suites may hold keys under lock: on the shared one.
    const server = await kit.server();
    const engine = kit.engine({ redis: server.url, keyPrefix: 'lock:' });
    const held = await engine.acquire('env:1');
    const list = await run(['list'], { REDIS_URL: server.url });
    expect([list.code, list.stderr]).toEqual([0, '']);
    expect(list.stdout).toMatch(/^lock\s+env:1\s+write\s/m);
    expect(list.stdout).toContain('1 held under lock:.');
    const inspect = await run(['inspect', 'env:1', '--json'], { REDIS_URL: server.url });
    const entry = JSON.parse(inspect.stdout) as {
      kind: string;
      key: string;
      mode: string;
      fencingToken: number;
      holders: { pid: number; owner: string; holdCount: number }[];
    };
    expect({ kind: entry.kind, key: entry.key, mode: entry.mode, fencingToken: entry.fencingToken }).toEqual({
      kind: 'lock',
      key: 'env:1',
      mode: 'write',
      fencingToken: held.fencingToken,
    });
    expect(entry.holders).toEqual([
      expect.objectContaining({
        pid: process.pid,
        owner: (await engine.inspect('env:1'))!.holders[0].owner,
        holdCount: 1,
      }),
    ]);
    expect(JSON.parse((await run(['inspect', 'env:none', '--json'], { REDIS_URL: server.url })).stdout)).toBeNull();
    await held.release();
  }, 60_000);

  it('lists, inspects and force-releases a semaphore (every permit)', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const permits = await Promise.all([
      engine.acquirePermit('pool', { limit: 3 }),
      engine.acquirePermit('pool', { limit: 3 }),
    ]);
    const base = ['--url', redisUrl(), '--prefix', prefix];
    const list = await run(['list', ...base]);
    expect(list.stdout).toMatch(/^semaphore\s+pool\s+permits 2\/3\s/m);
    const inspect = JSON.parse((await run(['inspect', 'pool', '--json', ...base])).stdout) as {
      kind: string;
      mode: string;
      holders: { owner: string }[];
    };
    expect({ kind: inspect.kind, mode: inspect.mode }).toEqual({ kind: 'semaphore', mode: 'permits 2/3' });
    expect(inspect.holders.map((h) => h.owner).sort()).toEqual(
      (await engine.inspectPermits('pool'))!.holders.map((h) => h.owner).sort(),
    );
    const human = await run(['inspect', 'pool', ...base]);
    expect(human.stdout).toContain('semaphore pool: permits 2/3');
    const released = await run(['release', 'pool', '--force', '--yes', '--json', ...base]);
    expect(JSON.parse(released.stdout)).toEqual({ key: 'pool', released: true });
    expect(await engine.inspectPermits('pool')).toBeNull();
    await Promise.all(permits.map((p) => p.release().catch(() => false)));
  }, 60_000);

  it('leaders lists each leader (name, holder, term, since) and list shows its lock as kind leader', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const terms: number[] = [];
    const lead = (term: { term: number; signal: AbortSignal }) => {
      terms.push(term.term);
      return new Promise<void>((resolve) => term.signal.addEventListener('abort', () => resolve()));
    };
    const stops = [engine.campaign('relay', lead), engine.campaign('warmer', lead)];
    kit.add(() => Promise.all(stops.map((stop) => stop())));
    await until(() => engine.isLeader('relay') && engine.isLeader('warmer'), 10_000, 'both leaders');
    const plain = await engine.acquire('relay:lock');
    const base = ['--url', redisUrl(), '--prefix', prefix];
    const leaders = await run(['leaders', ...base]);
    expect(leaders.code).toBe(0);
    expect(leaders.stdout).toMatch(/^NAME\s+HOLDER\s+TERM\s+SINCE\s/m);
    const relay = await engine.leader('relay');
    expect(leaders.stdout).toMatch(
      new RegExp(`^relay\\s+\\S+:${process.pid}\\s.*\\s${relay!.term}\\s+${relay!.since.toISOString()}`, 'm'),
    );
    expect(leaders.stdout).toMatch(/^warmer\s/m);
    expect(leaders.stdout).toContain(`2 leader(s) under ${prefix}.`);
    const json = JSON.parse((await run(['leaders', 'war', '--json', ...base])).stdout) as {
      name: string;
      pid: number;
      term: number;
    }[];
    expect(json.map((l) => [l.name, l.pid])).toEqual([['warmer', process.pid]]);
    expect(json[0].term).toBe((await engine.leader('warmer'))!.term);
    const list = await run(['list', ...base]);
    expect(list.stdout).toMatch(/^leader\s+leader:relay\s+write\s/m);
    expect(list.stdout).toMatch(/^lock\s+relay:lock\s+write\s/m);
    await plain.release();
    await Promise.all(stops.map((stop) => stop()));
    expect((await run(['leaders', ...base])).stdout.trim()).toBe(`no leader under ${prefix}.`);
  }, 60_000);

  it('watch redraws its table in place on a terminal (not --json)', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const lock = await engine.acquire('drawn:1');
    const quoted = [
      'timeout',
      '-s',
      'INT',
      '3',
      bin,
      'watch',
      '--interval',
      '300',
      '--url',
      redisUrl(),
      '--prefix',
      prefix,
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    const out = spawnSync('script', ['-qec', quoted, '/dev/null'], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
      timeout: 30_000,
    });
    const frames = out.stdout.split('\x1b[H\x1b[2J').slice(1);
    expect(frames.length).toBeGreaterThanOrEqual(3);
    for (const frame of frames.slice(0, 3)) {
      expect(frame).toMatch(/^nest-redis-locks watch 127\.0\.0\.1:\d+ .* \(every 300 ms, Ctrl-C to stop\)/);
      expect(frame).toMatch(/^lock\s+drawn:1\s+write\s/m);
    }
    await lock.release();
  }, 60_000);

  (noTls ? it.skip : it)(
    `connects over TLS (rediss:// with --tls-ca), and refuses a server it cannot verify${noTls ? ` (skipped: ${noTls})` : ''}`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-tls-'));
      kit.add(async () => rmSync(dir, { recursive: true, force: true }));
      const ssl = (...args: string[]) => {
        const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
      };
      ssl(
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=test CA',
        '-keyout',
        'ca.key',
        '-out',
        'ca.pem',
      );
      ssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        'server.key',
        '-out',
        'server.csr',
      );
      writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
      ssl(
        'x509',
        '-req',
        '-in',
        'server.csr',
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '1',
        '-extfile',
        'san.ext',
        '-out',
        'server.pem',
      );
      const tlsPort = await freePort();
      const server = await kit.server([
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        join(dir, 'server.pem'),
        '--tls-key-file',
        join(dir, 'server.key'),
        '--tls-ca-cert-file',
        join(dir, 'ca.pem'),
        '--tls-auth-clients',
        'no',
      ]);
      const prefix = uniquePrefix('cli');
      const engine = kit.engine({ redis: server.url, keyPrefix: prefix });
      const lock = await engine.acquire('tls:1');
      const url = `rediss://127.0.0.1:${tlsPort}`;
      const list = await run(['list', '--url', url, '--tls-ca', join(dir, 'ca.pem'), '--prefix', prefix]);
      expect([list.code, list.stderr]).toEqual([0, '']);
      expect(list.stdout).toMatch(/^lock\s+tls:1\s+write\s/m);
      // Without the CA the server's certificate cannot be verified: exit 1, one line naming the reason.
      const refused = await run(['list', '--url', url, '--prefix', prefix, '--timeout', '1000']);
      expect(refused.code).toBe(1);
      expectOneLineError(refused);
      expect(refused.stderr).toContain(
        `cannot reach Redis at 127.0.0.1:${tlsPort}: self-signed certificate in certificate chain`,
      );
      await lock.release();
    },
    60_000,
  );

  it('lists and releases the locks of every master of a Redis Cluster', async () => {
    const cluster = await RedisCluster.start(kit);
    const client = cluster.client();
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ redis: client, keyPrefix: prefix });
    const keys = Array.from({ length: 12 }, (_, i) => `shard:${i}`);
    const handles = await Promise.all(keys.map((k) => engine.acquire(k)));
    const masters = new Set(
      await Promise.all(keys.map(async (k) => (await cluster.masterFor(`${prefix}{${k}}`)).port)),
    );
    expect(masters.size).toBe(3);
    const [node] = cluster.nodes;
    const base = ['--cluster', '--url', `redis://${node.host}:${node.port}`, '--prefix', prefix];
    const list = JSON.parse((await run(['list', '--json', ...base])).stdout) as {
      entries: { key: string }[];
      complete: boolean;
    };
    expect(list.entries.map((e) => e.key)).toEqual([...keys].sort());
    expect(list.complete).toBe(true);
    // One node's URL without --cluster: the tool sees cluster_enabled:1 and scans every master all the same.
    const detected = JSON.parse(
      (await run(['list', '--json', '--url', `redis://${node.host}:${node.port}`, '--prefix', prefix])).stdout,
    ) as { entries: { key: string }[]; complete: boolean };
    expect([detected.entries.map((e) => e.key), detected.complete]).toEqual([[...keys].sort(), true]);
    const released = await run(['release', 'shard:7', '--force', '--yes', ...base]);
    expect(released.stdout.trim()).toBe('released "shard:7"');
    expect(await engine.inspect('shard:7')).toBeNull();
    await Promise.all(handles.filter((h) => h.key !== 'shard:7').map((h) => h.release()));
  }, 120_000);

  it('an unknown option: exit code 2 and one line whose quotes are closed', async () => {
    for (const args of [
      ['list', '--frobnicate'],
      ['inspect', 'k', '-x'],
      ['list', "--it's"], // a quote in the option: named whole, not cut at the quote
    ]) {
      const r = await run(args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 2]);
      expectOneLineError(r);
      const option = args[args.length - 1];
      expect(r.stderr).toBe(`nest-redis-locks: unknown option ${JSON.stringify(option)} (see --help)\n`);
    }
  }, 60_000);

  it('pointed at a port that does not speak the Redis protocol (an HTTP server), says so', async () => {
    const http = createServer((_req, res) => res.end('hello'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    kit.add(() => new Promise<void>((resolve) => http.close(() => resolve())));
    const { port } = http.address() as AddressInfo;
    for (const extra of [[], ['--cluster']]) {
      const r = await run(['list', '--url', `redis://127.0.0.1:${port}`, '--timeout', '1000', ...extra]);
      expect([extra.join(' '), r.code]).toEqual([extra.join(' '), 1]);
      expectOneLineError(r);
      expect(r.stderr).toContain(`127.0.0.1:${port} does not speak the Redis protocol`);
      expect(r.stderr).toContain('HTTP server');
      expect(r.stderr).not.toMatch(/RESP type|Please report|slots cache/);
      http.closeAllConnections();
    }
  }, 60_000);

  it('list and watch name the filter as the key the user typed, not the hash-tagged Redis key', async () => {
    const prefix = uniquePrefix('cli');
    const engine = kit.engine({ keyPrefix: prefix });
    const lock = await engine.acquire('invoice:1');
    const base = ['--url', redisUrl(), '--prefix', prefix];
    const list = await run(['list', 'invoice:', ...base]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(`1 held under ${prefix} whose key starts with "invoice:".`);
    expect(list.stdout).not.toContain('{');
    const child = spawn(bin, ['watch', 'invoice:', '--interval', '200', ...base], {
      cwd: project,
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await until(() => out.includes('whose key starts with'), 15_000, `a refresh of watch (got ${JSON.stringify(out)})`);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(out).toContain(`1 held under ${prefix} whose key starts with "invoice:".`);
    expect(out).not.toContain('{');
    await lock.release();
  }, 60_000);
});
