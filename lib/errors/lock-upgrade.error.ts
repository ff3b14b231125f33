import { LockError } from './lock.error.js';

/**
 * The caller holds the read lock on a key and asked for its write lock. Upgrading would deadlock as soon as
 * two readers tried it, so it is refused at once; take the write lock first (a write owner may then read).
 */
export class LockUpgradeError extends LockError {
  declare readonly key: string;

  constructor(key: string) {
    super(
      `cannot take the write lock on "${key}" while holding its read lock (lock upgrade would deadlock); ` +
        `take the write lock in the outer call instead: a write owner may also read`,
      { key },
    );
  }
}
