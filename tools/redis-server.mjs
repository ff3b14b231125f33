// Starts throwaway redis-server processes on free loopback ports, for the tests, the sample app and the
// benchmarks. Plain ESM JavaScript so that it runs before anything is compiled.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const INSTALL_HINT =
  'redis-server was not found: install it with `sudo apt-get install -y redis-server` (Debian/Ubuntu) ' +
  'or `brew install redis` (macOS), or point REDIS_URL at a running Redis 7.0+';

/**
 * The path of redis-server, or null when it is not installed. `REDIS_SERVER_BIN`, when set, names the binary to use
 * (another build or version); it must exist, or this throws rather than fall back to another server.
 */
export function findRedisServer() {
  const chosen = process.env.REDIS_SERVER_BIN;
  if (chosen) {
    try {
      accessSync(chosen, constants.X_OK);
    } catch {
      throw new Error(`REDIS_SERVER_BIN=${chosen} is not an executable redis-server`);
    }
    return chosen;
  }
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : null;
}

/**
 * Makes sure redis-server exists: installs Debian's package with apt-get when running as root,
 * otherwise throws one line saying how to install it.
 */
export function ensureRedisServer({ log = console.error } = {}) {
  const existing = findRedisServer();
  if (existing) return existing;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get']).status === 0;
  if (!isRoot || !hasApt) throw new Error(INSTALL_HINT);
  log('redis-server not found: installing it with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', 'redis-server'],
  ]) {
    const res = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (res.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed; ${INSTALL_HINT}`);
  }
  const installed = findRedisServer();
  if (!installed) throw new Error(INSTALL_HINT);
  return installed;
}

/**
 * `null` when the redis-server was built with TLS, otherwise the server's own words for why not (a build without
 * `BUILD_TLS`, as Redis and Valkey build by default), for a skip that says why. It starts the server with a TLS port
 * and certificate files that do not exist: a TLS build fails on those files, a build without TLS before them.
 */
export function redisServerTlsSupport() {
  const bin = findRedisServer();
  if (!bin) return 'redis-server is not installed';
  const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-tls-probe-'));
  try {
    const missing = join(dir, 'missing.pem');
    const args = ['--port', '0', '--tls-port', '1', '--tls-cert-file', missing, '--tls-key-file', missing];
    const out = spawnSync(bin, [...args, '--dir', dir, '--save', ''], { encoding: 'utf8', timeout: 5_000 });
    const said = `${out.stdout ?? ''}${out.stderr ?? ''}`;
    const line = /^.*(TLS support|built with TLS|connection type tls).*$/im.exec(said)?.[0];
    return line ? `${bin} has no TLS: ${line.replace(/^\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+[#*.-]\s*/, '')}` : null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function waitForReady(child, port) {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // a server that hangs at start must not outlive the attempt
      fail(new Error(`redis-server on port ${port} did not start in 10 s:\n${out}`));
    }, 10_000);
    const onData = (chunk) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) {
        cleanup();
        resolve();
      }
    };
    const onExit = (code) => fail(new Error(`redis-server on port ${port} exited with code ${code}:\n${out}`));
    function cleanup() {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
      child.stdout.resume();
    }
    function fail(err) {
      cleanup();
      reject(err);
    }
    child.stdout.on('data', onData);
    child.on('exit', onExit);
  });
}

/**
 * Starts a redis-server without persistence on a free loopback port (or `port`).
 * Returns `{ url, port, pid, dir, stop(), stopSync(), restart() }`; `restart()` keeps the port and loses the data;
 * `stopSync()` kills the server and removes its folder without waiting (for a process `exit` handler). `env`: more
 * environment variables for the server (e.g. libfaketime's, to shift its clock).
 */
export async function startRedisServer({ port, args = [], env } = {}) {
  const bin = ensureRedisServer();
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-'));
  let child;
  const launch = async () => {
    child = spawn(
      bin,
      ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args],
      { stdio: ['ignore', 'pipe', 'inherit'], env: env ? { ...process.env, ...env } : process.env },
    );
    await waitForReady(child, chosen);
  };
  const kill = () =>
    new Promise((resolve) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  await launch();
  return {
    url: `redis://127.0.0.1:${chosen}`,
    port: chosen,
    get pid() {
      return child.pid;
    },
    dir,
    stopSync() {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      await kill();
      await launch();
    },
  };
}
