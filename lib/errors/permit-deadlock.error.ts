import { LockError } from './lock.error.js';

/**
 * The caller already holds as many permits of a semaphore as its limit allows and asked for another one while
 * holding them: permits are not reentrant (each call takes one), so waiting would never end. Refused at once.
 */
export class PermitDeadlockError extends LockError {
  declare readonly key: string;
  /** The limit in force, and how many permits of it this call context holds. */
  readonly limit: number;
  readonly held: number;

  constructor(key: string, limit: number, held: number) {
    super(
      `cannot take a permit of "${key}": this call already holds ${held} of its ${limit} (permits are not reentrant, ` +
        `so waiting would never end); pass the outer permit down instead of acquiring again, or raise the limit`,
      { key },
    );
    this.limit = limit;
    this.held = held;
  }
}
