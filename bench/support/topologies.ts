// The topologies the `topologies` scenario measures, each started on loopback by the scenario itself from the same
// redis-server binary and torn down after it (also when the scenario fails, and on exit or SIGINT/SIGTERM). The
// process handling and the Cluster start-up are shared with the tests (test/support/redis-nodes.ts).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import type { LockEngineOptions } from '../../lib/index.js';
import {
  HOST,
  NodeProcess,
  closeClient,
  command,
  freePorts,
  poll,
  redisProgram,
  serverArgs,
  startClusterNodes,
} from '../../test/support/redis-nodes.js';
import type { NodeAddress } from '../../test/support/redis-nodes.js';

export type TopologyId = 'single' | 'single-wait' | 'cluster' | 'quorum';

/** What an engine of one topology is given, and how to close what was opened for it (a Cluster client). */
export interface EngineConnection {
  readonly options: Pick<LockEngineOptions, 'redis' | 'waitForReplicas'>;
  close(): Promise<void>;
}

/** One running topology. */
export interface BenchTopology {
  readonly id: TopologyId;
  readonly label: string;
  /** The settings, in words. */
  readonly settings: string;
  /** Every node, replicas included: where commands are counted. */
  readonly nodes: readonly NodeAddress[];
  /** A fresh connection input for one engine. */
  connect(): EngineConnection;
  dispose(): Promise<void>;
}

const url = (n: NodeAddress) => `redis://${n.host}:${n.port}`;

/** The processes and temp dir of one topology, killed and removed by `dispose`, at process exit, or on a signal. */
class Nodes {
  readonly dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-bench-topology-'));
  readonly processes: NodeProcess[] = [];
  private disposed = false;

  constructor() {
    LIVE.add(this);
    installHooks();
  }

  track = (node: NodeProcess): void => {
    this.processes.push(node);
  };

  /** Starts one standalone redis-server (with `extra` arguments) on a free port. */
  async server(role: string, extra: readonly string[] = []): Promise<NodeAddress> {
    const [port] = await freePorts(1);
    const dir = join(this.dir, String(port));
    mkdirSync(dir);
    await NodeProcess.start(role, port, redisServer(), [...serverArgs(port, dir), ...extra], this.track);
    return { host: HOST, port };
  }

  killNow(): void {
    for (const p of this.processes) {
      try {
        if (p.pid !== undefined && !p.exited) process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    LIVE.delete(this);
    await Promise.all(this.processes.map((p) => p.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const LIVE = new Set<Nodes>();
let hooksInstalled = false;

/** Whatever was not disposed is killed at exit, and on SIGINT/SIGTERM (whose default would skip the exit hook). */
function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once('exit', () => {
    for (const n of LIVE) n.killNow();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const n of LIVE) n.killNow();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
}

function redisServer(): string {
  const bin = redisProgram('redis-server');
  if (!bin) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
  return bin;
}

function standalone(redis: string | readonly string[]): EngineConnection {
  return { options: { redis }, close: async () => undefined };
}

/** `single`: one redis-server, the baseline. */
async function startSingle(nodes: Nodes): Promise<BenchTopology> {
  const node = await nodes.server('single');
  return {
    id: 'single',
    label: TOPOLOGY_LABELS['single'],
    settings: 'one redis-server; the library defaults',
    nodes: [node],
    connect: () => standalone(url(node)),
    dispose: () => nodes.dispose(),
  };
}

/** `single-wait`: a master with one replica; every grant and renewal waits for the replica (`WAIT 1`). */
async function startSingleWait(nodes: Nodes): Promise<BenchTopology> {
  // A replica's first sync would otherwise wait 5 s (the master's repl-diskless-sync-delay) for more replicas.
  const master = await nodes.server('master', ['--repl-diskless-sync-delay', '0']);
  const replica = await nodes.server('replica', ['--replicaof', master.host, String(master.port)]);
  await poll('the replica to be in sync', 10_000, async () =>
    /^master_link_status:up\r?$/m.test(String(await command(replica.port, ['INFO', 'replication']))) ? true : undefined,
  );
  await poll('the master to see its replica online', 10_000, async () =>
    /^slave0:.*state=online/m.test(String(await command(master.port, ['INFO', 'replication']))) ? true : undefined,
  );
  return {
    id: 'single-wait',
    label: TOPOLOGY_LABELS['single-wait'],
    settings: 'a master with one replica; waitForReplicas { replicas: 1 } (WAIT 1, timeout 1000 ms)',
    nodes: [master, replica],
    connect: () => ({
      options: { redis: url(master), waitForReplicas: { replicas: 1 } },
      close: async () => undefined,
    }),
    dispose: () => nodes.dispose(),
  };
}

/** `cluster`: 3 masters, no replicas; each engine gets its own ioredis `Cluster` client. */
async function startCluster(nodes: Nodes): Promise<BenchTopology> {
  const list = await startClusterNodes(redisServer(), nodes.dir, {}, nodes.track);
  return {
    id: 'cluster',
    label: TOPOLOGY_LABELS['cluster'],
    settings: '3 masters (no replicas), an ioredis Cluster client per engine; the library defaults',
    nodes: list,
    connect: () => {
      const client = new Cluster(list.map((n) => ({ host: n.host, port: n.port })));
      return { options: { redis: client }, close: () => closeClient(client) };
    },
    dispose: () => nodes.dispose(),
  };
}

/** `quorum`: 3 independent redis-servers, `redis: [a, b, c]`. */
async function startQuorum(nodes: Nodes): Promise<BenchTopology> {
  const list = [
    await nodes.server('quorum node'),
    await nodes.server('quorum node'),
    await nodes.server('quorum node'),
  ];
  return {
    id: 'quorum',
    label: TOPOLOGY_LABELS['quorum'],
    settings: '3 independent redis-servers, redis: [a, b, c]; the library defaults',
    nodes: list,
    connect: () => standalone(list.map(url)),
    dispose: () => nodes.dispose(),
  };
}

const STARTERS: Record<TopologyId, (nodes: Nodes) => Promise<BenchTopology>> = {
  single: startSingle,
  'single-wait': startSingleWait,
  cluster: startCluster,
  quorum: startQuorum,
};

export const TOPOLOGY_IDS: readonly TopologyId[] = ['single', 'single-wait', 'cluster', 'quorum'];

export const TOPOLOGY_LABELS: Record<TopologyId, string> = {
  single: 'single redis-server',
  'single-wait': 'single + waitForReplicas',
  cluster: 'Redis Cluster, 3 masters',
  quorum: 'quorum, 3 independent masters',
};

/** Starts topology `id`; on failure whatever was started is torn down before the error is thrown. */
export async function startTopology(id: TopologyId): Promise<BenchTopology> {
  const nodes = new Nodes();
  try {
    return await STARTERS[id](nodes);
  } catch (err) {
    await nodes.dispose();
    throw err;
  }
}

/** `CONFIG RESETSTAT` on every node. */
export async function resetStats(nodes: readonly NodeAddress[]): Promise<void> {
  await Promise.all(nodes.map((n) => command(n.port, ['CONFIG', 'RESETSTAT'])));
}

/** `INFO commandstats` of every node. */
export function commandStats(nodes: readonly NodeAddress[]): Promise<string[]> {
  return Promise.all(nodes.map(async (n) => String(await command(n.port, ['INFO', 'commandstats']))));
}
