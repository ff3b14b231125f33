import type { AcquireOptions, LockHandle, LockMode } from '../types/lock.types.js';

/** Metadata key under which a lock decorator records its method's `LockedMethodSpec`. */
export const LOCKED_METADATA = Symbol.for('nest-redis-locks.locked');

/** Turns a decorated method's arguments into lock keys, already checked with `validateLockKey`. */
export type KeyResolver = (args: readonly unknown[]) => string[];

/** What a lock decorator recorded about its method. */
export interface LockedMethodSpec {
  /** `Class.method`, for messages. */
  readonly method: string;
  readonly mode: LockMode;
  readonly options: AcquireOptions;
  readonly resolveKeys: KeyResolver;
  /** The method declares an `Observable` return type: the lock is taken on subscription. */
  readonly returnsObservable: boolean;
  /** `@Semaphore`: the method takes one permit of its one key, with this limit, instead of a lock. */
  readonly permitLimit?: number;
}

/** What a decorated method holds while it runs: a lock's handle, or a semaphore's permit. */
export type HeldByMethod = Pick<LockHandle, 'key' | 'signal' | 'release'>;
