import { LockError } from './lock.error.js';

/** The lock service is shutting down or closed: waiting acquisitions are rejected, new ones refused. */
export class LockClosedError extends LockError {
  constructor(key?: string) {
    super(`the lock service is closed${key ? ` (acquiring "${key}")` : ''}: the application is shutting down`, { key });
  }
}
