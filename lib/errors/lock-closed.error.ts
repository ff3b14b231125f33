import { LockError } from './lock.error.js';

/** The lock service is shutting down or closed: waiting acquisitions are rejected, new ones refused. */
export class LockClosedError extends LockError {
  /** `leader` and `term`: the leadership `key` is, whose term this shutdown ends (the message says it was leading). */
  constructor(key?: string, leader?: string, term?: number) {
    const what =
      leader !== undefined ? ` while leading "${leader}" (term ${term})` : key ? ` (acquiring "${key}")` : '';
    super(`the lock service is closed${what}: the application is shutting down`, { key });
  }
}
