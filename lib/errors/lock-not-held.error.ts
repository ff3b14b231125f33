import { LockError } from './lock.error.js';

/** An operation needed a hold that this caller no longer has: released already, lease ran out, or forced free. */
export class LockNotHeldError extends LockError {
  declare readonly key: string;

  constructor(key: string, detail: string) {
    super(`the lock on "${key}" is not held: ${detail}`, { key });
  }
}
