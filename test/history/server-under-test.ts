// The redis-server a history run checks: one process on a fixed loopback port, which the nemesis pauses, kills and
// restarts on the same port with or without persistence (AOF vs none), optionally under libfaketime (a clock that
// runs fast or starts shifted), with the TCP proxy in front of it for connection cuts.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { killNow, onExit } from '../support/faults.js';
import { RedisProxy } from '../support/redis-proxy.js';
import { HOST, answersPing, freePorts, sleep } from '../support/redis-nodes.js';
import { findRedisServer } from '../../tools/redis-server.mjs';

/** libfaketime's preload library on Debian (package libfaketime). */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * How the server persists: `aof` (`--appendonly yes --appendfsync always`, what the docs name as surviving a restart)
 * keeps its data across a kill; `none` (`--save "" --appendonly no`) loses it.
 */
export type Persistence = 'aof' | 'none';

export interface ServerOptions {
  /** The redis-server binary (default: REDIS_SERVER_BIN or the PATH's). */
  readonly bin?: string;
  readonly persistence: Persistence;
  /** libfaketime's `FAKETIME` (e.g. `+0 x1.005`), for a binary built without jemalloc. */
  readonly faketime?: string;
}

export class ServerUnderTest {
  private child: ChildProcess | undefined;
  private output = '';
  private persistence: Persistence;
  private faketime: string | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-history-'));
  private readonly forgetExit: () => void;
  paused = false;

  private constructor(
    readonly bin: string,
    readonly port: number,
    readonly proxy: RedisProxy,
    options: ServerOptions,
  ) {
    this.persistence = options.persistence;
    this.faketime = options.faketime;
    this.forgetExit = onExit(() => {
      killNow(this.child?.pid);
      rmSync(this.dir, { recursive: true, force: true });
    });
  }

  static async start(options: ServerOptions): Promise<ServerUnderTest> {
    const bin = options.bin ?? findRedisServer();
    if (!bin) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
    const [port] = await freePorts(1);
    const proxy = await RedisProxy.start(`redis://${HOST}:${port}`);
    const server = new ServerUnderTest(bin, port, proxy, options);
    await server.launch();
    return server;
  }

  /** Where clients connect directly (the fenced store, the harness). */
  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  /** Where the workers' engines connect: through the proxy, so that `cut` reaches them. */
  get proxiedUrl(): string {
    return this.proxy.url;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get currentPersistence(): Persistence {
    return this.persistence;
  }

  private async launch(): Promise<void> {
    const persist =
      this.persistence === 'aof'
        ? ['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']
        : ['--appendonly', 'no', '--save', ''];
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (this.faketime) {
      Object.assign(env, { LD_PRELOAD: LIBFAKETIME, FAKETIME: this.faketime, FAKETIME_DONT_FAKE_MONOTONIC: '1' });
    }
    const child = spawn(this.bin, ['--port', String(this.port), '--bind', HOST, '--dir', this.dir, ...persist], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    this.child = child;
    this.output = '';
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-4_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const deadline = performance.now() + 15_000;
    while (!(await answersPing(HOST, this.port, 300))) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`redis-server on port ${this.port} exited:\n${this.output}`);
      if (performance.now() > deadline)
        throw new Error(`redis-server on port ${this.port} did not start:\n${this.output}`);
      await sleep(10);
    }
  }

  pause(): void {
    if (this.child?.pid) process.kill(this.child.pid, 'SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    if (this.child?.pid) process.kill(this.child.pid, 'SIGCONT');
    this.paused = false;
  }

  /**
   * SIGKILL, then a new server on the same port and directory with `persistence` (and `faketime`, when given; `null`
   * turns the fake clock off). Resolves `true` when the data set is lost: the killed server or the new one has no
   * persistence (the directory is then wiped, so that no stale file comes back later).
   */
  async restart(persistence: Persistence, faketime?: string | null): Promise<boolean> {
    await this.kill();
    const lost = this.persistence === 'none' || persistence === 'none';
    if (lost) for (const name of readdirSync(this.dir)) rmSync(join(this.dir, name), { recursive: true, force: true });
    this.persistence = persistence;
    if (faketime !== undefined) this.faketime = faketime ?? undefined;
    await this.launch();
    return lost;
  }

  /** Whether the server keeps an AOF now (a restart with `aof` then keeps the data). */
  get hasAof(): boolean {
    return this.persistence === 'aof' && existsSync(join(this.dir, 'appendonlydir'));
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    this.paused = false;
    await gone;
  }

  async stop(): Promise<void> {
    await this.proxy.close().catch(() => undefined);
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
    this.forgetExit();
  }
}
