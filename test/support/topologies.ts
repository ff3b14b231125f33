// Real Redis topologies for tests, from the same binaries as the standalone test Redis: a 3-master Redis Cluster, and
// a Sentinel set (1 master, 1 replica, 3 sentinels) whose master can be killed to provoke a failover. Nothing here
// mocks Redis: every node is a real process on a free loopback port, started without persistence in a temp dir.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { findRedisServer } from '../../tools/redis-server.mjs';
import { killNow, onExit } from './faults.js';
import type { FaultResources } from './faults.js';
import { keysUnder } from './redis.js';
import {
  HOST,
  NodeProcess,
  closeClient,
  command,
  freePorts,
  poll,
  redisProgram,
  replicasCaughtUp,
  run,
  startClusterNodes,
} from './redis-nodes.js';
import type { NodeAddress } from './redis-nodes.js';

export type { NodeAddress } from './redis-nodes.js';

// The processes (spawned unref'd, output tail kept for errors), the one-shot commands and the cluster start-up live
// in ./redis-nodes.ts, which the bench shares; here they are killed by a process-exit hook if nobody disposed them.

/**
 * How to start a sentinel: `redis-sentinel` (Debian's, or the one beside `REDIS_SERVER_BIN`), else
 * `redis-server --sentinel` (the same program).
 */
function sentinelCommand(): { readonly bin: string; readonly extra: readonly string[] } | null {
  const sentinel = redisProgram('redis-sentinel');
  if (sentinel) return { bin: sentinel, extra: [] };
  const server = findRedisServer();
  return server ? { bin: server, extra: ['--sentinel'] } : null;
}

/** Shared base: the processes and temp dir of one topology, and their cleanup (dispose, or process exit). */
abstract class Topology {
  protected readonly dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-topology-'));
  protected readonly processes: NodeProcess[] = [];
  private readonly forgetExit: () => void;
  private disposed = false;

  protected constructor() {
    this.forgetExit = onExit(() => {
      for (const p of this.processes) killNow(p.pid);
      rmSync(this.dir, { recursive: true, force: true });
    });
  }

  protected spawnNode(role: string, port: number, bin: string, args: readonly string[]): Promise<NodeProcess> {
    return NodeProcess.start(role, port, bin, args, (node) => this.processes.push(node));
  }

  /** What to close before the processes are killed (clients). */
  protected async closeClients(): Promise<void> {
    // none by default
  }

  /** Kills every process of the topology and removes its directory. Safe to call more than once. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    try {
      await this.closeClients();
    } finally {
      await Promise.all(this.processes.map((p) => p.kill()));
      rmSync(this.dir, { recursive: true, force: true });
      this.forgetExit();
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Redis Cluster
// ---------------------------------------------------------------------------------------------------------------

/** How `RedisCluster.start` builds the cluster. */
export interface RedisClusterOptions {
  /** One replica per master, for failover tests (slower to start: 6 nodes and a replica sync each). */
  readonly replicas?: boolean;
  /** `cluster-node-timeout` with replicas (default 1000 ms): how soon a dead master is failed over. */
  readonly nodeTimeoutMs?: number;
}

/**
 * A Redis Cluster of 3 masters (no replicas by default) on free loopback ports, without persistence, its `nodes.conf`
 * files in a temp dir, joined with `redis-cli --cluster create`. `start` resolves once every node reports
 * `cluster_state:ok` (and, with `{ replicas: true }`, every replica is in sync). `client()` opens an ioredis `Cluster`
 * on it (closed by `dispose`, or earlier by `close`).
 *
 * With `{ replicas: true }` each master gets one replica and `cluster-node-timeout` is short (1 s by default,
 * `nodeTimeoutMs`), so `killMasterOf(key)` then `waitForFailover()` promote a replica within a few seconds.
 *
 * Cleanup: `dispose()` closes the clients, kills the nodes and removes the directory; pass `resources` (e.g. a
 * `LockTestKit`) to have it disposed with them; a process-exit hook kills whatever was not disposed.
 */
export class RedisCluster extends Topology {
  private readonly clients = new Set<Cluster>();
  private nodeList: NodeAddress[] = [];
  private readonly byPort = new Map<number, NodeProcess>();
  private readonly killed = new Set<number>();

  private constructor(private readonly options: RedisClusterOptions) {
    super();
  }

  static async start(resources?: FaultResources, options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const reason = await topologySupport();
    if (reason) throw new Error(`cannot start a Redis Cluster: ${reason}`);
    const cluster = new RedisCluster(options);
    resources?.add(() => cluster.dispose());
    try {
      await cluster.launch();
    } catch (err) {
      await cluster.dispose();
      throw err;
    }
    return cluster;
  }

  private async launch(): Promise<void> {
    this.nodeList = await startClusterNodes(findRedisServer() as string, this.dir, this.options, (node) => {
      this.processes.push(node);
      this.byPort.set(node.port, node);
    });
  }

  /** The nodes not killed. */
  private get live(): NodeAddress[] {
    return this.nodeList.filter((n) => !this.killed.has(n.port));
  }

  /** The current masters (the live nodes whose ROLE is master). */
  async masters(): Promise<NodeAddress[]> {
    const roles = await Promise.all(this.live.map(async (n) => ((await command(n.port, ['ROLE'])) as unknown[])[0]));
    return this.live.filter((_, i) => roles[i] === 'master');
  }

  /** One command on `node` itself (a fresh connection, closed after). */
  on(node: NodeAddress, args: readonly (string | number)[]): Promise<unknown> {
    return command(node.port, args);
  }

  /** The replica of `master` (with `{ replicas: true }`), from the master's `INFO replication`. */
  async replicaOf(master: NodeAddress): Promise<NodeAddress> {
    const info = String(await command(master.port, ['INFO', 'replication']));
    const m = /^slave0:ip=([^,]+),port=(\d+)/m.exec(info);
    if (!m) throw new Error(`${master.host}:${master.port} has no replica`);
    return { host: m[1], port: Number(m[2]) };
  }

  /** Resolves once `master`'s replica acknowledged every write the master had made; throws if not in time. */
  async replicated(master: NodeAddress, timeoutMs = 5_000): Promise<void> {
    await replicasCaughtUp(async () => String(await command(master.port, ['INFO', 'replication'])), timeoutMs);
  }

  /**
   * `CLIENT PAUSE <ms> WRITE` on `node`: on a replica, it holds back the replication stream, so a write its master
   * takes meanwhile is lost if the master dies before the pause ends.
   */
  async pauseWrites(node: NodeAddress, ms: number): Promise<void> {
    await command(node.port, ['CLIENT', 'PAUSE', ms, 'WRITE']);
  }

  /**
   * Moves the slot of `key` (with its keys) from its master to `to`, as `redis-cli --cluster reshard` does: IMPORTING
   * on the target, MIGRATING on the source, MIGRATE of every key, then SETSLOT NODE on every master. Clients learn of
   * it by MOVED replies (and the source drops the slot's sharded subscriptions).
   */
  async moveSlot(key: string, to: NodeAddress): Promise<void> {
    const from = await this.masterFor(key);
    if (from.port === to.port) throw new Error(`${key}'s slot is already on ${to.host}:${to.port}`);
    const slot = Number(await command(from.port, ['CLUSTER', 'KEYSLOT', key]));
    const [fromId, toId] = await Promise.all([
      command(from.port, ['CLUSTER', 'MYID']),
      command(to.port, ['CLUSTER', 'MYID']),
    ]);
    await command(to.port, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', String(fromId)]);
    await command(from.port, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', String(toId)]);
    for (;;) {
      const keys = (await command(from.port, ['CLUSTER', 'GETKEYSINSLOT', slot, 100])) as string[];
      if (keys.length === 0) break;
      await command(from.port, ['MIGRATE', to.host, to.port, '', 0, 5_000, 'KEYS', ...keys]);
    }
    await command(to.port, ['CLUSTER', 'SETSLOT', slot, 'NODE', String(toId)]);
    await command(from.port, ['CLUSTER', 'SETSLOT', slot, 'NODE', String(toId)]);
    for (const m of await this.masters()) {
      if (m.port !== from.port && m.port !== to.port)
        await command(m.port, ['CLUSTER', 'SETSLOT', slot, 'NODE', String(toId)]);
    }
  }

  /** SIGKILLs the master that serves `key`'s slot; resolves with its address once the process is gone. */
  async killMasterOf(key: string): Promise<NodeAddress> {
    const master = await this.masterFor(key);
    const node = this.byPort.get(master.port);
    if (!node) throw new Error(`${master.host}:${master.port} is not a node of this cluster`);
    this.killed.add(master.port);
    await node.kill();
    return master;
  }

  /**
   * Resolves with the new master of `key`'s slot once a replica took over from `from` (every live node reports
   * `cluster_state:ok` and a master other than `from` for that slot); throws after `timeoutMs`.
   */
  async waitForFailover(key: string, from: NodeAddress, timeoutMs: number): Promise<NodeAddress> {
    return poll(`a replica to take over ${key}'s slot from ${from.host}:${from.port}`, timeoutMs, async () => {
      for (const n of this.live) {
        if (!/^cluster_state:ok\r?$/m.test(String(await command(n.port, ['CLUSTER', 'INFO'])))) return undefined;
      }
      const master = await this.masterFor(key);
      if (master.port === from.port) return undefined;
      const role = (await command(master.port, ['ROLE'])) as unknown[];
      return role[0] === 'master' ? master : undefined;
    });
  }

  /** Every node's address, masters and replicas, killed or not (startup nodes for a client). */
  get nodes(): readonly NodeAddress[] {
    return this.nodeList;
  }

  /** A new ioredis `Cluster` client on this cluster; closed by `dispose` unless closed earlier with `close`. */
  client(options: ClusterOptions = {}): Cluster {
    const client = new Cluster(
      this.nodeList.map((n) => ({ host: n.host, port: n.port })),
      options,
    );
    this.clients.add(client);
    return client;
  }

  /** Closes a client made by `client()` (QUIT, bounded; then disconnect). Never rejects. */
  async close(client: Cluster): Promise<void> {
    this.clients.delete(client);
    await closeClient(client);
  }

  /** The master that serves `key`'s slot (`CLUSTER KEYSLOT`, then `CLUSTER SLOTS`). */
  async masterFor(key: string): Promise<NodeAddress> {
    const port = this.live[0].port;
    const slot = Number(await command(port, ['CLUSTER', 'KEYSLOT', key]));
    const ranges = (await command(port, ['CLUSTER', 'SLOTS'])) as [number, number, [string, number, ...unknown[]]][];
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no master serves slot ${slot} of "${key}"`);
    const [host, masterPort] = range[2];
    return { host: host || HOST, port: Number(masterPort) };
  }

  /**
   * Every key under `prefix` on any master (a SCAN on each: in a Cluster, SCAN sees one node's keys only). Bound, so
   * it can be handed on as is (e.g. `kit.watchKeys(prefix, cluster.keysUnder)`).
   */
  readonly keysUnder = async (prefix: string): Promise<string[]> => {
    const found: string[] = [];
    for (const n of await this.masters()) {
      const client = new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 2 });
      try {
        found.push(...(await keysUnder(client, prefix)));
      } finally {
        client.disconnect();
      }
    }
    return found.sort();
  };

  /**
   * Script calls (EVALSHA and EVAL) every live node has served since it started, summed: the library's lock operations.
   */
  async scriptCalls(): Promise<number> {
    let calls = 0;
    for (const n of this.live) calls += (await this.commandCalls(n.port, /^(?:evalsha|eval)$/)) ?? 0;
    return calls;
  }

  /** Calls of the commands whose lowercase name matches `name`, per live node (`INFO commandstats`), by port. */
  async callsPerNode(name: RegExp): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const n of this.live) out.set(n.port, await this.commandCalls(n.port, name));
    return out;
  }

  private async commandCalls(port: number, name: RegExp): Promise<number> {
    const stats = String(await command(port, ['INFO', 'commandstats']));
    let calls = 0;
    for (const [, command2, n] of stats.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm))
      if (name.test(command2)) calls += Number(n);
    return calls;
  }

  protected override async closeClients(): Promise<void> {
    const clients = [...this.clients];
    this.clients.clear();
    await Promise.all(clients.map((c) => closeClient(c)));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Sentinel
// ---------------------------------------------------------------------------------------------------------------

/** Master group name the sentinels monitor. */
const MASTER_NAME = 'm';

/**
 * Redis Sentinel on loopback: 1 master, 1 replica (`replicaof`) and 3 sentinels monitoring the master as `name`
 * with quorum 2, `down-after-milliseconds 1000` and `failover-timeout 5000`. `start` resolves once every sentinel
 * reports the master, sees the replica up and knows the 2 other sentinels. `killMaster()` SIGKILLs the current
 * master; `waitForFailover()` resolves with the new one once every live sentinel reports it.
 *
 * Cleanup as `RedisCluster`: `dispose()`, `resources`, and a process-exit hook.
 */
export class RedisSentinelSet extends Topology {
  readonly name = MASTER_NAME;
  private sentinelList: NodeAddress[] = [];
  private redisNodes = new Map<number, NodeProcess>();
  private killedMaster: NodeAddress | undefined;

  static async start(resources?: FaultResources): Promise<RedisSentinelSet> {
    const reason = await topologySupport();
    if (reason) throw new Error(`cannot start Redis Sentinel: ${reason}`);
    const set = new RedisSentinelSet();
    resources?.add(() => set.dispose());
    try {
      await set.launch();
    } catch (err) {
      await set.dispose();
      throw err;
    }
    return set;
  }

  private async launch(): Promise<void> {
    const bin = findRedisServer() as string;
    const sentinel = sentinelCommand() as NonNullable<ReturnType<typeof sentinelCommand>>;
    const [masterPort, replicaPort, ...sentinelPorts] = await freePorts(5);
    const serverArgs = (port: number) => {
      const dir = join(this.dir, String(port));
      mkdirSync(dir);
      // A replica's first sync would otherwise wait 5 s (repl-diskless-sync-delay) for more replicas to join it.
      return [
        '--port',
        String(port),
        '--bind',
        HOST,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--repl-diskless-sync-delay',
        '0',
      ];
    };
    this.redisNodes.set(masterPort, await this.spawnNode('master', masterPort, bin, serverArgs(masterPort)));
    this.redisNodes.set(
      replicaPort,
      await this.spawnNode('replica', replicaPort, bin, [
        ...serverArgs(replicaPort),
        '--replicaof',
        HOST,
        String(masterPort),
      ]),
    );
    await poll('the replica to be in sync', 10_000, async () =>
      /^master_link_status:up\r?$/m.test(String(await command(replicaPort, ['INFO', 'replication'])))
        ? true
        : undefined,
    );
    await Promise.all(
      sentinelPorts.map((port) => {
        const dir = join(this.dir, `sentinel-${port}`);
        mkdirSync(dir);
        // A sentinel rewrites its config file (discovered replicas and sentinels, epochs): it must be writable.
        const conf = join(dir, 'sentinel.conf');
        writeFileSync(
          conf,
          [
            `port ${port}`,
            `bind ${HOST}`,
            `dir ${dir}`,
            `sentinel monitor ${MASTER_NAME} ${HOST} ${masterPort} 2`,
            `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
            `sentinel failover-timeout ${MASTER_NAME} 5000`,
            `sentinel parallel-syncs ${MASTER_NAME} 1`,
            '',
          ].join('\n'),
        );
        return this.spawnNode('sentinel', port, sentinel.bin, [conf, ...sentinel.extra]);
      }),
    );
    this.sentinelList = sentinelPorts.map((port) => ({ host: HOST, port }));
    await Promise.all(
      sentinelPorts.map((port) =>
        poll(`sentinel ${port} to see the master, the replica and the other sentinels`, 15_000, async () => {
          const master = await this.masterSeenBy(port);
          if (master?.port !== masterPort) return undefined;
          const replicas = (await command(port, ['SENTINEL', 'REPLICAS', MASTER_NAME])) as string[][];
          const replicaUp = replicas.some((r) => {
            const f = fields(r);
            return Number(f.port) === replicaPort && f.flags === 'slave' && f['master-link-status'] === 'ok';
          });
          const others = (await command(port, ['SENTINEL', 'SENTINELS', MASTER_NAME])) as string[][];
          return replicaUp && others.length === 2 ? true : undefined;
        }),
      ),
    );
  }

  /** The sentinels' addresses. */
  get sentinels(): readonly NodeAddress[] {
    return this.sentinelList;
  }

  /** ioredis options that connect through the sentinels to the current master (`{ sentinels, name }` plus `extra`). */
  redisOptions(extra: RedisOptions = {}): RedisOptions {
    return { ...extra, sentinels: this.sentinelList.map((s) => ({ host: s.host, port: s.port })), name: this.name };
  }

  /** The current master, as the first sentinel that answers reports it (`SENTINEL get-master-addr-by-name`). */
  async master(): Promise<NodeAddress> {
    let last: unknown;
    for (const s of this.sentinelList) {
      try {
        const master = await this.masterSeenBy(s.port);
        if (master) return master;
      } catch (err) {
        last = err;
      }
    }
    throw new Error(`no sentinel reports a master for "${this.name}"${last ? `: ${(last as Error).message}` : ''}`);
  }

  /** SIGKILLs the current master; resolves once its process is gone, with its address. */
  async killMaster(): Promise<NodeAddress> {
    const master = await this.master();
    const node = this.redisNodes.get(master.port);
    if (!node) throw new Error(`the master ${master.host}:${master.port} is not a process of this set`);
    await node.kill();
    this.killedMaster = master;
    return master;
  }

  /**
   * Resolves with the new master once every sentinel reports a master other than the one `killMaster` killed (or
   * `from`) and it answers as a master; throws after `timeoutMs`.
   */
  async waitForFailover(timeoutMs: number, from: NodeAddress | undefined = this.killedMaster): Promise<NodeAddress> {
    const old = from ?? (await this.master());
    return poll(`the sentinels to fail over from ${old.host}:${old.port}`, timeoutMs, async () => {
      const seen = await Promise.all(this.sentinelList.map((s) => this.masterSeenBy(s.port)));
      const first = seen[0];
      if (!first || first.port === old.port || seen.some((m) => m?.port !== first.port)) return undefined;
      const role = (await command(first.port, ['ROLE'])) as unknown[];
      return role[0] === 'master' ? first : undefined;
    });
  }

  private async masterSeenBy(sentinelPort: number): Promise<NodeAddress | undefined> {
    const reply = (await command(sentinelPort, ['SENTINEL', 'get-master-addr-by-name', MASTER_NAME])) as
      [string, string] | null;
    return reply ? { host: reply[0], port: Number(reply[1]) } : undefined;
  }
}

/** A flat `[field, value, …]` reply as an object. */
function fields(flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

let support: Promise<string | null> | undefined;

/**
 * `null` when this machine can start a `RedisCluster` and a `RedisSentinelSet` (redis-server 7.0 or newer,
 * redis-cli, and redis-sentinel or redis-server's sentinel mode), otherwise the plain reason, for a skip that says
 * why. Probes once per process.
 */
export function topologySupport(): Promise<string | null> {
  support ??= probeTopologySupport();
  return support;
}

async function probeTopologySupport(): Promise<string | null> {
  const server = findRedisServer();
  if (!server) return 'redis-server is not installed (apt-get install -y redis-server)';
  if (!redisProgram('redis-cli')) return 'redis-cli is not installed (apt-get install -y redis-tools)';
  if (!sentinelCommand()) return 'neither redis-sentinel nor redis-server is installed';
  const version = /v=(\d+)\./.exec(await run(server, ['--version']).catch(() => ''));
  if (!version || Number(version[1]) < 7)
    return `redis-server 7.0 or newer is needed (cluster-port, sharded pub/sub); found ${version?.[0] ?? 'an unknown version'}`;
  return null;
}
