// redis-server processes on loopback and the Redis Cluster start-up, as plain code with no test framework and no
// import outside node and ioredis: the test topologies (test/support/topologies.ts) and the bench's topologies
// scenario (bench/scenarios/topologies.scenario.ts, compiled by tsconfig.bench.json) both build on it.
import { execFile, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { Cluster } from 'ioredis';

/** A node's loopback address. */
export interface NodeAddress {
  readonly host: string;
  readonly port: number;
}

export const HOST = '127.0.0.1';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The path of the program `name` on the PATH, or null. */
export function which(name: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : null;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The path of a Redis program, or null. With `REDIS_SERVER_BIN` set (the redis-server build the tests run against,
 * as tools/redis-server.mjs reads it), `redis-server` is that binary and the other programs come from its directory;
 * a `redis-cli` missing there is taken from the PATH, a `redis-sentinel` is not (the caller runs
 * `redis-server --sentinel`, so the sentinels are the same build). Without it, every program comes from the PATH.
 */
export function redisProgram(name: 'redis-server' | 'redis-cli' | 'redis-sentinel'): string | null {
  const chosen = process.env.REDIS_SERVER_BIN;
  if (!chosen) return which(name);
  if (name === 'redis-server') return executable(chosen) ? chosen : null;
  const sibling = join(dirname(chosen), name);
  if (executable(sibling)) return sibling;
  return name === 'redis-cli' ? which(name) : null;
}

/** Whether a redis-server at `host:port` answers PING within `timeoutMs` (one fresh connection, no retries). */
export function answersPing(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.on('error', () => done(false));
  });
}

/** Runs `cmd args`; resolves with its stdout, rejects with its output when it fails. */
export function run(cmd: string, args: readonly string[], timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${(stderr || stdout).trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

/**
 * One redis-server (or sentinel) process: spawned unref'd (a forgotten one must not keep the process alive), with
 * the tail of its output kept for error messages.
 */
export class NodeProcess {
  private output = '';

  private constructor(
    readonly role: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-4_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.unref();
    for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }

  /**
   * Spawns `bin args`, hands the process to `track` at once (for cleanup), and resolves once it answers PING on `port`.
   */
  static async start(
    role: string,
    port: number,
    bin: string,
    args: readonly string[],
    track: (node: NodeProcess) => void,
  ): Promise<NodeProcess> {
    const node = new NodeProcess(role, port, spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    track(node);
    const deadline = performance.now() + 10_000;
    for (;;) {
      if (node.exited)
        throw new Error(
          `${role} on port ${port} exited (${node.child.exitCode ?? node.child.signalCode}):\n${node.output}`,
        );
      if (await answersPing(HOST, port, 200)) return node;
      if (performance.now() > deadline)
        throw new Error(`${role} on port ${port} did not answer PING within 10 s:\n${node.output}`);
      await sleep(10);
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** SIGKILL; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    // Awaited: the child must keep the event loop alive until its exit is seen.
    this.child.ref();
    this.child.kill('SIGKILL');
    await gone;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `count` distinct free loopback ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** One command on a fresh connection to `port` (no retries, no offline queue), then closed. */
export async function command(port: number, args: readonly (string | number)[], timeoutMs = 2_000): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  });
  client.on('error', () => {
    // reported through the command's rejection
  });
  try {
    await client.connect();
    const [name, ...rest] = args;
    return await client.call(String(name), ...rest);
  } finally {
    client.disconnect();
  }
}

/**
 * Resolves once every replica of the master at `port` has acknowledged the whole replication stream the master had
 * written when this was called: the acknowledged offset of each replica in the master's `INFO replication` against
 * its `master_repl_offset`. (`WAIT` on a connection of its own is no such check: it waits for the writes made on
 * that connection only, none, and Redis 7.4 and Valkey 8 answer it at once.) `info` reads `INFO replication`.
 */
export async function replicasCaughtUp(info: () => Promise<string>, timeoutMs = 5_000): Promise<void> {
  const target = Number(/^master_repl_offset:(\d+)/m.exec(await info())?.[1] ?? 0);
  await poll(`the replicas to acknowledge offset ${target}`, timeoutMs, async () => {
    const acked = [...(await info()).matchAll(/^slave\d+:.*\boffset=(\d+)/gm)].map((m) => Number(m[1]));
    return acked.length > 0 && acked.every((offset) => offset >= target) ? true : undefined;
  });
}

/** Polls `check` every 50 ms until it returns a value other than `undefined`; throws after `timeoutMs`. */
export async function poll<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    }
    await sleep(50);
  }
}

/** Closes an ioredis client: QUIT bounded by one second, then disconnect. Never rejects. */
export async function closeClient(client: Redis | Cluster): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([client.quit().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 1_000)))]);
    clearTimeout(timer);
  }
  if ((client.status as string) !== 'end') client.disconnect();
}

/** The redis-server arguments of a throwaway loopback node: no persistence, its files in `dir`. */
export function serverArgs(port: number, dir: string): string[] {
  return ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir];
}

/** How `startClusterNodes` builds the cluster. */
export interface ClusterNodesOptions {
  /** One replica per master (6 nodes instead of 3). */
  readonly replicas?: boolean;
  /** `cluster-node-timeout` with replicas (default 1000 ms): how soon a dead master is failed over. */
  readonly nodeTimeoutMs?: number;
}

/**
 * Starts the nodes of a Redis Cluster of 3 masters (and with `replicas`, one replica each) on free loopback ports,
 * their `nodes.conf` files under `dir`, joins them with `redis-cli --cluster create`, and resolves with their
 * addresses once every node reports `cluster_state:ok` (and every replica is in sync). Each process is handed to
 * `track` as soon as it is spawned: the caller kills them (also when this rejects).
 */
export async function startClusterNodes(
  bin: string,
  dir: string,
  options: ClusterNodesOptions,
  track: (node: NodeProcess) => void,
): Promise<NodeAddress[]> {
  // The cluster bus gets a port of its own (`cluster-port`): the default, port + 10000, may not exist or be free.
  const count = options.replicas ? 6 : 3;
  const ports = await freePorts(2 * count);
  const nodes = ports.slice(0, count).map((port, i) => ({ port, busPort: ports[count + i] }));
  const replicaArgs = options.replicas
    ? [
        '--cluster-node-timeout',
        String(options.nodeTimeoutMs ?? 1_000),
        '--repl-diskless-sync-delay',
        '0',
        '--cluster-replica-validity-factor',
        '0',
      ]
    : [];
  await Promise.all(
    nodes.map(async ({ port, busPort }) => {
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir);
      await NodeProcess.start(
        'cluster node',
        port,
        bin,
        [
          ...serverArgs(port, nodeDir),
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(nodeDir, 'nodes.conf'),
          '--cluster-port',
          String(busPort),
          ...replicaArgs,
        ],
        track,
      );
    }),
  );
  const list = nodes.map(({ port }) => ({ host: HOST, port }));
  const cli = redisProgram('redis-cli');
  if (!cli) throw new Error('redis-cli is not installed (apt-get install -y redis-tools)');
  await run(cli, [
    '--cluster',
    'create',
    ...list.map((n) => `${n.host}:${n.port}`),
    '--cluster-replicas',
    options.replicas ? '1' : '0',
    '--cluster-yes',
  ]);
  await Promise.all(
    list.map((n) =>
      poll(`cluster_state:ok on ${n.host}:${n.port}`, 15_000, async () => {
        const info = String(await command(n.port, ['CLUSTER', 'INFO']));
        if (!/^cluster_state:ok\r?$/m.test(info) || !new RegExp(`^cluster_known_nodes:${count}\r?$`, 'm').test(info))
          return undefined;
        const replication = String(await command(n.port, ['INFO', 'replication']));
        // A replica counts once its link to its master is up (a master has no such line).
        return /^role:master\r?$/m.test(replication) || /^master_link_status:up\r?$/m.test(replication)
          ? true
          : undefined;
      }),
    ),
  );
  return list;
}
