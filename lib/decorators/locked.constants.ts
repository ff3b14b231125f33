import type { AcquireOptions, LockMode } from '../locking/lock.types.js';
import type { KeyResolver } from './key-template.js';

/** Metadata key under which a decorated method records its lock. */
export const LOCKED_METADATA = Symbol.for('nest-redis-locks.locked');

/** What a lock decorator recorded about its method. */
export interface LockedMethodSpec {
  /** `Class.method`, for messages. */
  readonly method: string;
  readonly mode: LockMode;
  readonly options: AcquireOptions;
  readonly resolveKeys: KeyResolver;
  /** The method declares an `Observable` return type: the lock is taken on subscription. */
  readonly returnsObservable: boolean;
}
