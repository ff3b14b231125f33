import { afterAll, beforeAll, beforeEach, expect } from '@jest/globals';
import type { LockEngine, LockEngineOptions } from '../../lib/locking/lock-engine.js';
import { MemoryLockWorld } from '../../lib/testing/memory-lock-world.js';
import { LockTestKit, uniquePrefix } from '../support/lock-test-kit.js';
import type { MemoryLogger } from '../support/lock-test-kit.js';
import { RedisCluster } from '../support/topologies.js';

/**
 * Where the locks of a semantic test live: the real Redis store, the memory store, or the Redis store on a real
 * 3-master Redis Cluster (engines given an ioredis `Cluster` client each).
 */
export type StoreKind = 'redis' | 'memory' | 'cluster';

/** Every semantic test runs once per kind, so neither the memory store nor a Cluster can drift from the Lua scripts. */
export const STORE_KINDS: readonly StoreKind[] = ['redis', 'memory', 'cluster'];

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
  private clusterEngines = 0;

  /** Call it in a `describe` block: for the cluster kind it starts the block's Cluster before its first test. */
  constructor(readonly kind: StoreKind) {
    if (kind === 'cluster') this.cluster = new ClusterOfBlock();
  }

  get logger(): MemoryLogger {
    return this.kit.logger;
  }

  /** Another engine ("app instance") on this test's lock world. */
  engine(options: EngineOptions = {}): LockEngine {
    const all = { keyPrefix: this.prefix, ...options };
    if (this.cluster) {
      const cluster = this.cluster.cluster;
      this.clusterEngines++;
      const client = cluster.client();
      this.kit.add(() => cluster.close(client)); // closed after the engine, which leaves a client it was given open
      const engine = this.kit.engine({ ...all, redis: client });
      this.kit.watchKeys(engine.settings.keyPrefix, cluster.keysUnder);
      return engine;
    }
    return this.kind === 'redis' ? this.kit.engine(all) : this.kit.memoryEngine(this.world, all);
  }

  async closeAll(): Promise<void> {
    this.prefix = uniquePrefix('semantics');
    this.world = new MemoryLockWorld();
    const usedCluster = this.clusterEngines > 0;
    this.clusterEngines = 0;
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

/** A counter read and written with an await in between, as a GET then SET on a remote store would be. */
export class SlowCounter {
  value = 0;

  async increment(): Promise<void> {
    const read = this.value;
    await new Promise<void>((r) => setTimeout(r, 1));
    this.value = read + 1;
  }
}
