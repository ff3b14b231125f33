import type { LockEngine, LockEngineOptions } from '../../lib/locking/lock-engine.js';
import { MemoryLockWorld } from '../../lib/testing/memory-lock-world.js';
import { LockTestKit, uniquePrefix } from '../support/lock-test-kit.js';
import type { MemoryLogger } from '../support/lock-test-kit.js';

/** Where the locks of a semantic test live: the real Redis store, or the memory store. */
export type StoreKind = 'redis' | 'memory';

/** Every semantic test runs once per kind, so the memory store cannot drift from the Lua scripts. */
export const STORE_KINDS: readonly StoreKind[] = ['redis', 'memory'];

/** Engine options a test may set (the store decides the connection). */
export type EngineOptions = Partial<Omit<LockEngineOptions, 'redis'>>;

/**
 * The engines of one test, all sharing one lock world (one key prefix on the test Redis, or one `MemoryLockWorld`),
 * like instances of one app. Tracked by a `LockTestKit`: `closeAll` closes them and fails the test if any lock
 * state is left behind; the next test gets a fresh world.
 */
export class LockWorlds {
  private readonly kit = new LockTestKit();
  private prefix = uniquePrefix('semantics');
  private world = new MemoryLockWorld();

  constructor(readonly kind: StoreKind) {}

  get logger(): MemoryLogger {
    return this.kit.logger;
  }

  /** Another engine ("app instance") on this test's lock world. */
  engine(options: EngineOptions = {}): LockEngine {
    const all = { keyPrefix: this.prefix, ...options };
    return this.kind === 'redis' ? this.kit.engine(all) : this.kit.memoryEngine(this.world, all);
  }

  async closeAll(): Promise<void> {
    this.prefix = uniquePrefix('semantics');
    this.world = new MemoryLockWorld();
    await this.kit.closeAll();
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
