import { afterAll, beforeAll, beforeEach, expect } from '@jest/globals';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import { MemoryLockWorld } from '../../lib/testing/memory-lock-world.js';
import { LockTestKit, uniquePrefix } from '../support/lock-test-kit.js';
import type { MemoryLogger } from '../support/lock-test-kit.js';
import { RedisCluster } from '../support/topologies.js';
import { RedisProcess } from '../support/faults.js';
import { Redis } from 'ioredis';
import type { Cluster } from 'ioredis';
import type { WorkerRedis, WorkerTask } from '../fixtures/worker-protocol.js';
import { keysUnder, redisUrl } from '../support/redis.js';
import { lockKeys } from '../../lib/redis/key-layout.js';
import { WorkerProcess } from '../support/worker-process.js';
import { DRIVERS, openDriverClient } from '../support/driver-clients.js';
import type { DriverClient, DriverName } from '../support/driver-clients.js';

/**
 * Where the locks of a semantic test live: the real Redis store, the memory store, the Redis store on a real
 * 3-master Redis Cluster (engines given an ioredis `Cluster` client each), or quorum mode over 3 independent
 * redis-servers (engines given the 3 URLs).
 */
export type StoreKind = 'redis' | 'memory' | 'cluster' | 'quorum' | `${DriverName}` | `${DriverName} cluster`;

/**
 * Every semantic test runs once per kind, so neither the memory store, a Cluster, quorum mode nor a client library
 * can drift from the Lua scripts' semantics. The driver kinds give each engine an application's client of that
 * library (iovalkey, node-redis v5, Valkey GLIDE) on the test Redis, or on the block's Redis Cluster.
 */
export const STORE_KINDS: readonly StoreKind[] = [
  'redis',
  'memory',
  'cluster',
  'quorum',
  ...DRIVERS,
  ...DRIVERS.map((d) => `${d} cluster` as const),
];

/** The client library of a driver kind, and whether it runs on the block's Cluster. */
function driverOf(kind: StoreKind): { readonly name: DriverName; readonly cluster: boolean } | undefined {
  const [name, cluster] = kind.split(' ');
  return (DRIVERS as readonly string[]).includes(name)
    ? { name: name as DriverName, cluster: cluster === 'cluster' }
    : undefined;
}

/** Engine options a test may set (the store decides the connection). */
export type EngineOptions = Partial<Omit<LockEngineOptions, 'redis'>>;

/**
 * The engines of one test, all sharing one lock world (one key prefix on the test Redis or on the block's Redis
 * Cluster, or one `MemoryLockWorld`), like instances of one app. Tracked by a `LockTestKit`: `closeAll` closes them
 * and fails the test if any lock state is left behind (on every Cluster master too); the next test gets a fresh world.
 */
export class LockWorlds {
  private readonly kit = new LockTestKit();
  private prefix = uniquePrefix('semantics');
  private world = new MemoryLockWorld();
  private readonly cluster: ClusterOfBlock | undefined;
  private readonly masters: MastersOfBlock | undefined;
  private readonly clients: DriverClientsOfBlock | undefined;
  private clusterEngines = 0;

  /**
   * Call it in a `describe` block: for the cluster kind it starts the block's Cluster, for the quorum kind the
   * block's 3 masters, before its first test.
   */
  constructor(readonly kind: StoreKind) {
    const driver = driverOf(kind);
    if (kind === 'cluster' || driver?.cluster) this.cluster = new ClusterOfBlock();
    if (kind === 'quorum') this.masters = new MastersOfBlock();
    if (driver) this.clients = new DriverClientsOfBlock(driver.name, () => this.cluster?.cluster);
  }

  /** Whether this world is one standalone Redis (the test Redis), whatever client the engines use. */
  private get standalone(): boolean {
    return this.kind === 'redis' || (this.clients !== undefined && !this.cluster);
  }

  get logger(): MemoryLogger {
    return this.kit.logger;
  }

  /** Another engine ("app instance") on this test's lock world. */
  engine(options: EngineOptions = {}): LockEngine {
    const all = { keyPrefix: this.prefix, ...options };
    if (this.clients) {
      const engine = this.kit.engine({ ...all, redis: this.clients.next() as never });
      if (this.cluster) {
        this.clusterEngines++;
        this.kit.watchKeys(engine.settings.keyPrefix, this.cluster.cluster.keysUnder);
      } else {
        this.kit.watchPrefix(redisUrl(), engine.settings.keyPrefix);
      }
      return engine;
    }
    if (this.cluster) {
      const cluster = this.cluster.cluster;
      this.clusterEngines++;
      const client = cluster.client();
      this.kit.add(() => cluster.close(client)); // closed after the engine, which leaves a client it was given open
      const engine = this.kit.engine({ ...all, redis: client });
      this.kit.watchKeys(engine.settings.keyPrefix, cluster.keysUnder);
      return engine;
    }
    if (this.masters) {
      const engine = this.kit.engine({ ...all, redis: this.masters.urls });
      this.kit.watchKeys(engine.settings.keyPrefix, this.masters.keysUnder);
      return engine;
    }
    return this.kind === 'redis' ? this.kit.engine(all) : this.kit.memoryEngine(this.world, all);
  }

  /** The key prefix of this test's engines. */
  get keyPrefix(): string {
    return this.prefix;
  }

  /** The keys this test's engines left under their prefix (in the memory world, on Redis, on every master). */
  async keys(): Promise<string[]> {
    if (this.kind === 'memory') return this.world.keys(this.prefix);
    if (this.cluster) return this.cluster.cluster.keysUnder(this.prefix);
    if (this.masters) return this.masters.keysUnder(this.prefix);
    const client = this.redis() as Redis;
    return keysUnder(client, this.prefix);
  }

  /** Deletes this test's keys (e.g. a limit `setPermitLimit` keeps for a day), so the leftover check passes. */
  async dropKeys(): Promise<void> {
    if (this.kind === 'memory') return this.world.clear();
    const client = this.redis();
    for (const key of await this.keys()) await client.del(key);
  }

  /** A plain client on this world's Redis (a `Cluster` client for the cluster kind), closed by `closeAll`. */
  redis(): Redis | Cluster {
    if (this.cluster) {
      const cluster = this.cluster.cluster;
      const client = cluster.client();
      this.kit.add(() => cluster.close(client));
      return client;
    }
    if (!this.standalone) throw new Error(`no single Redis client for the ${this.kind} kind`);
    return this.kit.redis();
  }

  /**
   * Records every wake-up published for `key` from now on, as its message (a waiter id, `f:<id>` for a fair one):
   * a plain client SUBSCRIBEd to the key's channel, SSUBSCRIBEd on the master of its slot on a Cluster, a listener
   * of the memory world. Closed by `closeAll`.
   */
  async wakeUps(key: string): Promise<string[]> {
    const seen: string[] = [];
    if (this.kind === 'memory') {
      const listener = {
        onWakeUp: (w: unknown) => seen.push(typeof w === 'string' ? w : (w as { waiterId: string }).waiterId),
        onError: () => undefined,
        stopped: false,
      };
      const stop = this.world.listen(this.prefix, key, listener);
      this.kit.add(async () => stop());
      return seen;
    }
    if (this.masters) throw new Error('quorum mode has no semaphores, hence no wake-ups to count');
    const { channel } = lockKeys(this.prefix, key);
    const at = this.cluster ? await this.cluster.cluster.masterFor(channel) : undefined;
    const client = at ? new Redis({ host: at.host, port: at.port }) : new Redis(redisUrl());
    this.kit.add(async () => client.disconnect());
    client.on('message', (_channel: string, message: string) => seen.push(message));
    client.on('smessage', (_channel: string, message: string) => seen.push(message));
    if (at) await client.ssubscribe(channel);
    else await client.subscribe(channel);
    return seen;
  }

  /** Where a worker process's engine (test/fixtures/lock-worker.ts) connects to reach this world. */
  get workerRedis(): WorkerRedis {
    if (this.cluster) return { cluster: this.cluster.cluster.nodes.map(({ host, port }) => ({ host, port })) };
    if (this.masters) return this.masters.urls;
    if (this.kind === 'memory') throw new Error('a memory world lives in this process: no worker can reach it');
    return redisUrl();
  }

  /** A worker process (test/fixtures/lock-worker.ts) running `task`; killed by `closeAll` if still running. */
  worker(task: WorkerTask): WorkerProcess {
    return WorkerProcess.start(this.kit, task);
  }

  async closeAll(): Promise<void> {
    this.prefix = uniquePrefix('semantics');
    this.world = new MemoryLockWorld();
    const usedCluster = this.clusterEngines > 0;
    this.clusterEngines = 0;
    this.clients?.rewind();
    await this.kit.closeAll();
    // Guard: the cluster kind's engines really sent their scripts to the Cluster (not to some other Redis).
    if (usedCluster) expect(await this.cluster?.scriptCallsInTest()).toBeGreaterThan(0);
  }
}

/**
 * One Redis Cluster for the `describe` block that makes this (in the semantic specs, the block of the cluster kind:
 * one per test file), started in its `beforeAll` and disposed in its `afterAll`.
 */
class ClusterOfBlock {
  private started: RedisCluster | undefined;
  private callsBefore = 0;

  constructor() {
    beforeAll(async () => {
      this.started = await RedisCluster.start();
    }, 30_000);
    beforeEach(async () => {
      if (this.started) this.callsBefore = await this.started.scriptCalls();
    });
    afterAll(() => this.started?.dispose());
  }

  get cluster(): RedisCluster {
    if (!this.started) throw new Error('the Redis Cluster of this describe block did not start (see its beforeAll)');
    return this.started;
  }

  /** Script calls the Cluster served since the current test began. */
  async scriptCallsInTest(): Promise<number> {
    return (await this.cluster.scriptCalls()) - this.callsBefore;
  }
}

/**
 * The application's clients of one library for the `describe` block that makes this (a driver kind's block), opened
 * in its `beforeAll` (GLIDE opens its clients asynchronously; an engine is made synchronously) and closed in its
 * `afterAll`, after every engine: the library never closes a client it was given. Each engine of a test gets a
 * client of its own, like an instance of an app; the next test uses them again.
 */
class DriverClientsOfBlock {
  private static readonly PER_TEST = 8;
  private opened: DriverClient[] = [];
  private used = 0;

  constructor(name: DriverName, cluster: () => RedisCluster | undefined) {
    beforeAll(async () => {
      const on = cluster();
      const target = on ? { cluster: on.nodes.map(({ host, port }) => ({ host, port })) } : { url: redisUrl() };
      for (let i = 0; i < DriverClientsOfBlock.PER_TEST; i++) this.opened.push(await openDriverClient(name, target));
    }, 30_000);
    afterAll(async () => {
      await Promise.all(this.opened.map((c) => c.close()));
    });
  }

  next(): object {
    const client = this.opened[this.used++];
    if (!client) throw new Error(`a test of a driver kind may make ${DriverClientsOfBlock.PER_TEST} engines at most`);
    return client.client;
  }

  rewind(): void {
    this.used = 0;
  }
}

/** Three independent redis-servers for the `describe` block that makes this (the quorum kind's block). */
class MastersOfBlock {
  private started: RedisProcess[] = [];

  constructor() {
    beforeAll(async () => {
      this.started = await Promise.all([RedisProcess.start(), RedisProcess.start(), RedisProcess.start()]);
    }, 30_000);
    afterAll(() => Promise.all(this.started.map((r) => r.dispose())));
  }

  get urls(): string[] {
    if (this.started.length === 0)
      throw new Error('the masters of this describe block did not start (see its beforeAll)');
    return this.started.map((r) => r.url);
  }

  /** The keys under `prefix` on every master (what the keys-left-behind check lists). */
  readonly keysUnder = async (prefix: string): Promise<string[]> => {
    const found: string[] = [];
    for (const url of this.urls) {
      const client = new Redis(url, { maxRetriesPerRequest: 2 });
      try {
        found.push(...(await keysUnder(client, prefix)).map((k) => `${url} ${k}`));
      } finally {
        client.disconnect();
      }
    }
    return found;
  };
}

/** A counter read and written with an await in between, as a GET then SET on a remote store would be. */
export class SlowCounter {
  value = 0;

  async increment(): Promise<void> {
    const read = this.value;
    await new Promise<void>((r) => setTimeout(r, 1));
    this.value = read + 1;
  }
}

/** The kinds with semaphores (quorum mode has none) on one Redis or in memory. */
export const STANDALONE_PERMIT_KINDS: readonly StoreKind[] = STORE_KINDS.filter(
  (kind) => kind !== 'quorum' && !kind.includes('cluster'),
);
/** The kinds with semaphores on the Redis Cluster. */
export const CLUSTER_PERMIT_KINDS: readonly StoreKind[] = STORE_KINDS.filter((kind) => kind.includes('cluster'));
