// Entry `nest-redis-locks/testing`: real lock semantics without Redis, for the tests of applications.
export { RedisLockTestingModule } from './redis-lock-testing.module.js';
export type { RedisLockTestingModuleOptions } from './redis-lock-testing.module.js';
export { MemoryLockWorld } from './memory-lock-world.js';
export { createMemoryLockEngine } from './memory-lock-engine.js';
export type { MemoryLockEngineOptions } from './memory-lock-engine.js';
