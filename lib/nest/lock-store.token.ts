/**
 * @internal Injection token of a `LockStoreFactory` that replaces Redis under `LockService` (used by the testing
 * module; unset in applications).
 */
export const LOCK_STORE_FACTORY = Symbol.for('nest-redis-locks.store-factory');
