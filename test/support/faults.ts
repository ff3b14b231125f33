// Real faults for tests (CI runs as root): a redis-server that can be paused, killed and restarted, a redis-server
// behind a network partition that can be cut and healed without either end noticing, and a blocked event loop.
// Nothing here mocks Redis: every fault happens to a real process or a real network path.
import { execFile, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureRedisServer, startRedisServer } from '../../tools/redis-server.mjs';
import type { RedisServerProcess } from '../../tools/redis-server.mjs';
import { answersPing, sleep } from './redis-nodes.js';

/** Where a fault's cleanup is registered, e.g. a `LockTestKit` (`closeAll` runs it) or a list of your own. */
export interface FaultResources {
  add(closer: () => Promise<unknown>): void;
}

export { answersPing, sleep };

/** Keeps the event loop busy (no timer, I/O or promise callback runs) for `ms` milliseconds. */
export function blockEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/** Polls `answersPing` until it succeeds; throws after `withinMs`, or at once when `exited()` says the server died. */
async function waitForPing(host: string, port: number, withinMs: number, exited: () => string | null): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const gone = exited();
    if (gone) throw new Error(`redis-server at ${host}:${port} exited: ${gone}`);
    if (await answersPing(host, port, 200)) return;
    if (performance.now() > deadline)
      throw new Error(`redis-server at ${host}:${port} did not answer PING within ${withinMs} ms`);
    await sleep(20);
  }
}

// Safety net: whatever a test forgot to dispose (or could not, because the worker is exiting) is killed and removed
// synchronously when the process exits, so no paused redis-server or namespace outlives the run.
const exitCleanups = new Set<() => void>();
let exitHookInstalled = false;
export function onExit(cleanup: () => void): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const fn of exitCleanups) {
        try {
          fn();
        } catch {
          // best effort while exiting
        }
      }
    });
  }
  exitCleanups.add(cleanup);
  return () => exitCleanups.delete(cleanup);
}

export function killNow(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A private redis-server on a free loopback port, without persistence (tools/redis-server.mjs starts it), whose
 * process the test can pause, kill and restart.
 *
 * Cleanup: `dispose()` (also `stop()`) kills it even while paused; pass `resources` (e.g. a `LockTestKit`) to have
 * it disposed with them. Note that `LockTestKit.closeAll` checks the key prefixes of `kit.engine({ redis: url })`
 * engines after running its closers: for such engines, dispose in `afterEach` after `kit.closeAll()` instead.
 */
export class RedisProcess {
  private pausedNow = false;
  private readonly forgetExit: () => void;

  private constructor(private readonly server: RedisServerProcess) {
    this.forgetExit = onExit(() => killNow(this.server.pid));
  }

  /** `args`: more redis-server arguments (e.g. `['--replicaof', host, port]`). */
  static async start(resources?: FaultResources, args: readonly string[] = []): Promise<RedisProcess> {
    const redis = new RedisProcess(await startRedisServer({ args: [...args] }));
    resources?.add(() => redis.dispose());
    return redis;
  }

  get url(): string {
    return this.server.url;
  }

  get port(): number {
    return this.server.port;
  }

  /** The redis-server's process id (a new one after `restart()`). */
  get pid(): number {
    const { pid } = this.server;
    if (pid === undefined) throw new Error('redis-server has no process');
    return pid;
  }

  get paused(): boolean {
    return this.pausedNow;
  }

  /** SIGSTOP: the server keeps its connections open but answers nothing until `resume()`. */
  pause(): void {
    process.kill(this.pid, 'SIGSTOP');
    this.pausedNow = true;
  }

  /** SIGCONT: answers what was sent meanwhile. */
  resume(): void {
    process.kill(this.pid, 'SIGCONT');
    this.pausedNow = false;
  }

  /** SIGKILL (works while paused too); resolves once the process is gone and the port refuses connections. */
  async kill(): Promise<void> {
    const pid = this.server.pid;
    if (pid === undefined) return;
    killNow(pid);
    this.pausedNow = false;
    const deadline = performance.now() + 5_000;
    while (isAlive(pid)) {
      if (performance.now() > deadline) throw new Error(`redis-server ${pid} did not exit after SIGKILL`);
      await sleep(5);
    }
  }

  /** Starts it again on the same port, with no data; resolves once it answers PING. Kills it first if running. */
  async restart(): Promise<void> {
    await this.kill();
    await this.server.restart();
    await waitForPing('127.0.0.1', this.port, 10_000, () => null);
  }

  /** Kills it and removes its directory. Safe to call more than once. */
  async stop(): Promise<void> {
    this.pausedNow = false;
    await this.server.stop();
    this.forgetExit();
  }

  dispose(): Promise<void> {
    return this.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Network partition: host namespace (the test process, the client) ↔ veth ↔ router namespace ↔ veth ↔ server
// namespace (a redis-server). `cut()` puts a zero-length pfifo qdisc on both router veths: every packet the router
// would forward (and its ARP replies) is dropped silently, so neither end sees a reset, an ICMP error or a closed
// socket; the client's requests just get no answers. `heal()` deletes the qdiscs and TCP's retransmissions get
// through on the same connection.
// ---------------------------------------------------------------------------------------------------------------

/** Namespace names are `nrl<pid, 6 hex><sequence, 2 hex>-r|-s`; interfaces add one letter (12 chars, limit 15). */
const NAME_PATTERN = /^nrl([0-9a-f]{6})[0-9a-f]{2}-[rs]$/;
let sequence = 0;

function run(cmd: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: 10_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

/** Synchronous teardown (also used from the exit hook): kills every process in the namespaces, then deletes them. */
function removeNamespacesSync(names: readonly string[]): void {
  for (const ns of names) {
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
    for (const pid of pids.split(/\s+/).filter(Boolean)) killNow(Number(pid));
  }
  // Deleting the router namespace destroys its veth ends, and with them their peers in the host and server namespace.
  for (const ns of names) spawnSync('ip', ['netns', 'delete', ns], { stdio: 'ignore' });
}

/** Removes namespaces of this kit left behind by processes that no longer exist (a crashed or killed test run). */
async function sweepStaleNamespaces(): Promise<void> {
  const listed = await run('ip', ['netns', 'list']).catch(() => '');
  const stale = listed
    .split('\n')
    .map((line) => line.split(' ')[0])
    .filter((name) => {
      const m = NAME_PATTERN.exec(name);
      return m !== null && !isAlive(parseInt(m[1], 16));
    });
  if (stale.length > 0) removeNamespacesSync(stale);
}

/** An address block 10.213.x.y/29 that no host interface uses yet (random, so parallel workers do not collide). */
async function freeBlock(): Promise<string> {
  const used = await run('ip', ['-4', '-o', 'addr', 'show']);
  for (let attempt = 0; attempt < 50; attempt++) {
    const index = Math.floor(Math.random() * 8192);
    const base = `10.213.${index >> 5}.${(index & 31) * 8}`;
    if (!used.includes(` ${offset(base, 1)}/`)) return base;
  }
  throw new Error('no free 10.213.0.0/16 address block for a partition');
}

function offset(base: string, n: number): string {
  const parts = base.split('.').map(Number);
  parts[3] += n;
  return parts.join('.');
}

/**
 * A redis-server in a network namespace of its own, reached from the test process through a router namespace that
 * `cut()` turns into a black hole. `url` is the address to give clients (`redis://10.213.x.y:6379`).
 *
 * Requires root and `ip`/`tc` (iproute2); check `partitionSupport()` first. Names are unique per process and
 * instance; `dispose()` removes the server, the namespaces, the veths and the route even after a failed test, and a
 * process-exit hook removes whatever was not disposed.
 */
export class RedisPartition {
  private child: ChildProcess | undefined;
  private output = '';
  private cutNow = false;
  private disposed = false;
  private readonly forgetExit: () => void;
  private readonly dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-ns-'));

  private constructor(
    private readonly id: string,
    private readonly bin: string,
    /** Address of the redis-server, in its namespace. */
    readonly host: string,
  ) {
    this.forgetExit = onExit(() => {
      removeNamespacesSync([this.routerNs, this.serverNs]);
      rmSync(this.dir, { recursive: true, force: true });
    });
  }

  /** Builds the namespaces and starts the redis-server; resolves once it answers PING from the test process. */
  static async create(resources?: FaultResources): Promise<RedisPartition> {
    const bin = ensureRedisServer();
    await sweepStaleNamespaces();
    const id = `nrl${process.pid.toString(16).padStart(6, '0')}${(sequence++ % 256).toString(16).padStart(2, '0')}`;
    const base = await freeBlock();
    const partition = new RedisPartition(id, bin, offset(base, 6));
    resources?.add(() => partition.dispose());
    try {
      await partition.build(base);
      await partition.startServer();
    } catch (err) {
      await partition.dispose();
      throw err;
    }
    return partition;
  }

  get port(): number {
    return 6379;
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get isCut(): boolean {
    return this.cutNow;
  }

  /** The redis-server's process id. */
  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error('partitioned redis-server is not running');
    return pid;
  }

  private get routerNs(): string {
    return `${this.id}-r`;
  }

  private get serverNs(): string {
    return `${this.id}-s`;
  }

  /** The router's two veth ends: towards the host and towards the server. */
  private get routerLinks(): readonly string[] {
    return [`${this.id}a`, `${this.id}b`];
  }

  private async build(base: string): Promise<void> {
    const [r, s] = [this.routerNs, this.serverNs];
    const [hostIf, routerHostIf, routerServerIf, serverIf] = [
      `${this.id}h`,
      `${this.id}a`,
      `${this.id}b`,
      `${this.id}s`,
    ];
    const steps: [string, ...string[]][] = [
      ['ip', 'netns', 'add', r],
      ['ip', 'netns', 'add', s],
      ['ip', 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', routerHostIf, 'netns', r],
      ['ip', 'link', 'add', serverIf, 'netns', s, 'type', 'veth', 'peer', 'name', routerServerIf, 'netns', r],
      ['ip', 'addr', 'add', `${offset(base, 1)}/30`, 'dev', hostIf],
      ['ip', 'link', 'set', hostIf, 'up'],
      ['ip', '-n', r, 'addr', 'add', `${offset(base, 2)}/30`, 'dev', routerHostIf],
      ['ip', '-n', r, 'addr', 'add', `${offset(base, 5)}/30`, 'dev', routerServerIf],
      ['ip', '-n', r, 'link', 'set', routerHostIf, 'up'],
      ['ip', '-n', r, 'link', 'set', routerServerIf, 'up'],
      ['ip', 'netns', 'exec', r, 'sysctl', '-qw', 'net.ipv4.ip_forward=1'],
      ['ip', '-n', s, 'addr', 'add', `${this.host}/30`, 'dev', serverIf],
      ['ip', '-n', s, 'link', 'set', 'lo', 'up'],
      ['ip', '-n', s, 'link', 'set', serverIf, 'up'],
      ['ip', '-n', s, 'route', 'add', 'default', 'via', offset(base, 5)],
      ['ip', 'route', 'add', `${offset(base, 4)}/30`, 'via', offset(base, 2), 'dev', hostIf],
    ];
    for (const [cmd, ...args] of steps) await run(cmd, args);
  }

  private async startServer(): Promise<void> {
    // `ip netns exec` execs redis-server in place, so the child's pid is the server's (signals reach it directly).
    // Protected mode would refuse non-loopback clients; this server is reachable from this run's namespaces only.
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.serverNs,
        this.bin,
        '--port',
        String(this.port),
        '--bind',
        this.host,
        '--protected-mode',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-4_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    // A forgotten partition must not keep the test process alive: then the exit hook removes it.
    child.unref();
    for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref?: () => void }).unref?.();
    await waitForPing(this.host, this.port, 10_000, () =>
      child.exitCode !== null || child.signalCode !== null
        ? `${child.exitCode ?? child.signalCode}\n${this.output}`
        : null,
    );
  }

  /** Black hole: from now on nothing gets through in either direction, and nobody is told. */
  async cut(): Promise<void> {
    if (this.cutNow) return;
    for (const dev of this.routerLinks)
      await run('ip', [
        'netns',
        'exec',
        this.routerNs,
        'tc',
        'qdisc',
        'add',
        'dev',
        dev,
        'root',
        'pfifo',
        'limit',
        '0',
      ]);
    this.cutNow = true;
  }

  /** Lets traffic through again; open connections carry on where they stopped. */
  async heal(): Promise<void> {
    if (!this.cutNow) return;
    for (const dev of this.routerLinks)
      await run('ip', ['netns', 'exec', this.routerNs, 'tc', 'qdisc', 'del', 'dev', dev, 'root']);
    this.cutNow = false;
  }

  /** SIGSTOP of the redis-server (combine with a cut, or use `RedisProcess` for pauses alone). */
  pause(): void {
    process.kill(this.pid, 'SIGSTOP');
  }

  resume(): void {
    process.kill(this.pid, 'SIGCONT');
  }

  /** Kills the server, deletes the namespaces (their veths and the host's route go with them). Idempotent. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    removeNamespacesSync([this.routerNs, this.serverNs]);
    rmSync(this.dir, { recursive: true, force: true });
    this.forgetExit();
  }
}

let support: Promise<string | null> | undefined;

/**
 * `null` when this machine can build a `RedisPartition` (root, iproute2, network namespaces, veth, the pfifo qdisc),
 * otherwise the plain reason, for `it.skip` with a name that says why. Probes once per process.
 */
export function partitionSupport(): Promise<string | null> {
  support ??= probePartitionSupport();
  return support;
}

async function probePartitionSupport(): Promise<string | null> {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'network namespaces need root';
  for (const tool of ['ip', 'tc']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `\`${tool}\` (iproute2) is not installed`;
  }
  await sweepStaleNamespaces();
  const id = `nrl${process.pid.toString(16).padStart(6, '0')}ff`;
  const ns = `${id}-r`;
  try {
    await run('ip', ['netns', 'add', ns]);
    await run('ip', ['-n', ns, 'link', 'add', `${id}a`, 'type', 'veth', 'peer', 'name', `${id}b`]);
    await run('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', `${id}a`, 'root', 'pfifo', 'limit', '0']);
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    removeNamespacesSync([ns]);
  }
}
