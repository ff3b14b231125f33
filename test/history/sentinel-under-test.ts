// A Sentinel set for history runs: 2 data nodes (a master and its replica, no persistence) and 3 sentinels on
// loopback. `failover()` holds the replica's replication back, lets grants land on the master alone, kills the
// master, waits for the sentinels to promote the replica, and starts the killed node again as the new master's
// replica, so that the next failover has one.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killNow, onExit } from '../support/faults.js';
import { HOST, NodeProcess, command, freePorts, poll, redisProgram, sleep } from '../support/redis-nodes.js';
import { findRedisServer } from '../../tools/redis-server.mjs';

const NAME = 'm';

export class SentinelUnderTest {
  private readonly dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-history-sentinel-'));
  private readonly processes = new Map<number, NodeProcess>();
  private readonly forgetExit: () => void;
  private sentinelPorts: number[] = [];
  private watcher: Redis | undefined;
  /** Promotions the sentinels announced (`+switch-master`), whoever caused them: `[from port, to port]`. */
  onSwitch: ((from: number, to: number) => void) | undefined;

  private constructor(
    private readonly bin: string,
    private readonly dataPorts: readonly number[],
  ) {
    this.forgetExit = onExit(() => {
      for (const p of this.processes.values()) killNow(p.pid);
      rmSync(this.dir, { recursive: true, force: true });
    });
  }

  static async start(serverBin?: string): Promise<SentinelUnderTest> {
    const bin = serverBin ?? findRedisServer();
    if (!bin) throw new Error('redis-server is not installed');
    const [a, b, ...sentinels] = await freePorts(5);
    const set = new SentinelUnderTest(bin, [a, b]);
    try {
      await set.launch(sentinels);
    } catch (err) {
      await set.stop();
      throw err;
    }
    return set;
  }

  /** What the workers connect with (ioredis `{ sentinels, name }`). */
  get target(): { sentinels: { host: string; port: number }[]; name: string } {
    return { sentinels: this.sentinelPorts.map((port) => ({ host: HOST, port })), name: NAME };
  }

  private dataArgs(port: number, replicaOf?: number): string[] {
    const dir = join(this.dir, String(port));
    mkdirSync(dir, { recursive: true });
    return [
      ...['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir],
      ...['--repl-diskless-sync-delay', '0'],
      ...(replicaOf ? ['--replicaof', HOST, String(replicaOf)] : []),
    ];
  }

  private async spawn(role: string, port: number, bin: string, args: string[]): Promise<void> {
    await NodeProcess.start(role, port, bin, args, (node) => this.processes.set(port, node));
  }

  private async launch(sentinelPorts: number[]): Promise<void> {
    const [a, b] = this.dataPorts;
    await this.spawn('master', a, this.bin, this.dataArgs(a));
    await this.spawn('replica', b, this.bin, this.dataArgs(b, a));
    await this.replicaInSync(b);
    const sentinel = redisProgram('redis-sentinel');
    await Promise.all(
      sentinelPorts.map((port) => {
        const dir = join(this.dir, `sentinel-${port}`);
        mkdirSync(dir);
        const conf = join(dir, 'sentinel.conf');
        const lines = [`port ${port}`, `bind ${HOST}`, `dir ${dir}`, `sentinel monitor ${NAME} ${HOST} ${a} 2`];
        lines.push(`sentinel down-after-milliseconds ${NAME} 1000`, `sentinel failover-timeout ${NAME} 5000`, '');
        writeFileSync(conf, lines.join('\n'));
        return sentinel
          ? this.spawn('sentinel', port, sentinel, [conf])
          : this.spawn('sentinel', port, this.bin, [conf, '--sentinel']);
      }),
    );
    this.sentinelPorts = sentinelPorts;
    await Promise.all(
      sentinelPorts.map((port) =>
        poll(`sentinel ${port} to know the replica and the other sentinels`, 20_000, async () => {
          const replicas = (await command(port, ['SENTINEL', 'REPLICAS', NAME])) as string[][];
          const others = (await command(port, ['SENTINEL', 'SENTINELS', NAME])) as unknown[];
          return replicas.some((r) => r.includes('slave') && r.includes(String(b))) && others.length === 2
            ? true
            : undefined;
        }),
      ),
    );
  }

  private replicaInSync(port: number): Promise<unknown> {
    return poll(`replica ${port} in sync`, 20_000, async () =>
      /^master_link_status:up\r?$/m.test(String(await command(port, ['INFO', 'replication']))) ? true : undefined,
    );
  }

  /**
   * Listens to the first sentinel's `+switch-master` announcements, so that a failover the sentinels make on their
   * own (a master slow to answer on a loaded machine) is logged too.
   */
  async watch(): Promise<void> {
    this.watcher = new Redis({ host: HOST, port: this.sentinelPorts[0], maxRetriesPerRequest: 1 });
    this.watcher.on('error', () => undefined);
    this.watcher.on('message', (_channel: string, message: string) => {
      // "<name> <old ip> <old port> <new ip> <new port>"
      const [, , from, , to] = message.split(' ');
      this.onSwitch?.(Number(from), Number(to));
    });
    await this.watcher.subscribe('+switch-master');
  }

  /** The master as the first sentinel that answers reports it. */
  async master(): Promise<number> {
    for (const port of this.sentinelPorts) {
      const reply = (await command(port, ['SENTINEL', 'get-master-addr-by-name', NAME]).catch(() => null)) as
        [string, string] | null;
      if (reply) return Number(reply[1]);
    }
    throw new Error('no sentinel reports a master');
  }

  /**
   * Holds the replica's replication back (`client-pause`: for `holdMs`, the writes meanwhile are lost; `sigstop`: the
   * replica is stopped until the master is gone, nothing is lost), kills the master `killAfterMs` into it, waits for
   * the sentinels to promote the replica (up to 30 s), and restarts the killed node as its replica. `onKill` is
   * called just before the kill (to log it). Resolves the new master's port.
   */
  async failover(
    holdBack: 'client-pause' | 'sigstop',
    holdMs: number,
    killAfterMs: number,
    onKill: () => void,
  ): Promise<number> {
    const old = await this.master();
    const replica = this.dataPorts.find((p) => p !== old) as number;
    const replicaPid = this.processes.get(replica)?.pid;
    // `CLIENT PAUSE … WRITE` keeps the stream unapplied but, on Redis 7.0, the replica still acknowledges it (WAIT
    // counts it): writes are lost though acknowledged. A stopped replica acknowledges nothing, and applies what its
    // socket holds once continued: nothing is lost, and WAIT says so.
    if (holdBack === 'client-pause') await command(replica, ['CLIENT', 'PAUSE', holdMs, 'WRITE']);
    else if (replicaPid) process.kill(replicaPid, 'SIGSTOP');
    await sleep(killAfterMs);
    onKill();
    await this.processes.get(old)?.kill();
    if (holdBack === 'sigstop' && replicaPid) process.kill(replicaPid, 'SIGCONT');
    await poll(`the sentinels to promote ${replica}`, 30_000, async () => {
      const seen = await Promise.all(
        this.sentinelPorts.map((s) => command(s, ['SENTINEL', 'get-master-addr-by-name', NAME]).catch(() => null)),
      );
      if (!seen.every((r) => r && Number((r as string[])[1]) === replica)) return undefined;
      return ((await command(replica, ['ROLE'])) as unknown[])[0] === 'master' ? true : undefined;
    });
    await this.spawn('replica', old, this.bin, this.dataArgs(old, replica));
    await this.replicaInSync(old);
    // Every sentinel done with the failover and seeing the old master back as a replica: a sentinel still in the
    // middle of it could otherwise promote again later, on its own.
    await poll('the sentinels to settle', 30_000, async () => {
      for (const port of this.sentinelPorts) {
        const flags = fieldOf((await command(port, ['SENTINEL', 'MASTER', NAME])) as string[], 'flags');
        if (flags !== 'master') return undefined;
        const replicas = (await command(port, ['SENTINEL', 'REPLICAS', NAME])) as string[][];
        const back = replicas.find((r) => fieldOf(r, 'port') === String(old));
        if (!back || fieldOf(back, 'flags') !== 'slave' || fieldOf(back, 'master-link-status') !== 'ok')
          return undefined;
      }
      return true;
    });
    return replica;
  }

  async stop(): Promise<void> {
    this.watcher?.disconnect();
    await Promise.all([...this.processes.values()].map((p) => p.kill()));
    rmSync(this.dir, { recursive: true, force: true });
    this.forgetExit();
  }
}

/** A field of a flat `[name, value, …]` reply. */
function fieldOf(flat: readonly string[], name: string): string | undefined {
  const i = flat.indexOf(name);
  return i >= 0 && i % 2 === 0 ? flat[i + 1] : undefined;
}
