import { expect } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockEngine } from '../../lib/locking/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/lock-engine.js';
import { memoryLockStore } from '../../lib/testing/memory-lock-store.js';
import { MemoryLockWorld } from '../../lib/testing/memory-lock-world.js';
import { MemoryLogger } from '../support/lock-test-kit.js';
import { keysUnder, redisUrl, uniquePrefix } from '../support/redis.js';

/** Where the locks of a semantic test live: the real Redis store, or the memory store. */
export type StoreKind = 'redis' | 'memory';

/** Every semantic test runs once per kind, so the memory store cannot drift from the Lua scripts. */
export const STORE_KINDS: readonly StoreKind[] = ['redis', 'memory'];

/** Engine options a test may set (the store decides the connection). */
export type EngineOptions = Partial<Omit<LockEngineOptions, 'redis'>>;

/**
 * The engines of one test, all sharing one lock world (one key prefix on the test Redis, or one `MemoryLockWorld`),
 * like instances of one app. `closeAll` closes them and fails the test if any lock state is left behind.
 */
export class LockWorlds {
  readonly logger = new MemoryLogger();
  private engines: LockEngine[] = [];
  private prefix = uniquePrefix('semantics');
  private world = new MemoryLockWorld();

  constructor(readonly kind: StoreKind) {}

  /** Another engine ("app instance") on this test's lock world. */
  engine(options: EngineOptions = {}): LockEngine {
    const base = { keyPrefix: this.prefix, logger: this.logger, ...options };
    const engine =
      this.kind === 'redis'
        ? new LockEngine({ ...base, redis: redisUrl() })
        : new LockEngine({ ...base, redis: undefined as never }, memoryLockStore(this.world));
    this.engines.push(engine);
    return engine;
  }

  /** Closes every engine, then expects nothing left under the test's prefix; the next test gets a fresh world. */
  async closeAll(): Promise<void> {
    const engines = this.engines.splice(0);
    const prefix = this.prefix;
    const world = this.world;
    this.prefix = uniquePrefix('semantics');
    this.world = new MemoryLockWorld();
    await Promise.all(engines.map((e) => e.close()));
    if (this.kind === 'memory') {
      expect(world.keys(prefix)).toEqual([]);
      return;
    }
    const client = new Redis(redisUrl(), { maxRetriesPerRequest: 2 });
    try {
      expect(await keysUnder(client, prefix)).toEqual([]);
    } finally {
      client.disconnect();
    }
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
