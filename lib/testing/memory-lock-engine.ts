import { LockEngine } from '../locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../locking/engine/engine-options.js';
import { memoryLockStore } from './memory-lock-store.js';
import type { MemoryLockWorld } from './memory-lock-world.js';

/** Options of `createMemoryLockEngine`: the engine options without `redis`, plus the world to live in. */
export interface MemoryLockEngineOptions extends Omit<LockEngineOptions, 'redis'> {
  /** Where the locks live. Default `MemoryLockWorld.default`, shared by the process. */
  readonly world?: MemoryLockWorld;
}

/**
 * A `LockEngine` on a memory store: the framework-free engine with real lock semantics and no Redis, for tests of
 * code that uses `LockEngine` directly. Close it as any engine.
 *
 * @example
 * const engine = createMemoryLockEngine({ leaseMs: 1_000 });
 * await engine.withLock('report:7', () => buildReport(7));
 * await engine.close();
 */
export function createMemoryLockEngine(options: MemoryLockEngineOptions = {}): LockEngine {
  const { world, ...engineOptions } = options;
  return new LockEngine({ ...engineOptions, redis: undefined as never }, memoryLockStore(world));
}
