import { LockError } from './lock.error.js';

/**
 * The lock service is shutting down or closed: waiting acquisitions are rejected, new ones refused, and the holds it
 * releases itself end with this (their signal aborts with it before the release is sent).
 */
export class LockClosedError extends LockError {
  /** `doing`: what the caller was doing with `key`, acquiring it or holding it (released by the shutdown). */
  constructor(key?: string, doing: 'acquiring' | 'holding' = 'acquiring') {
    super(
      `the lock service is closed${key ? ` (${doing} "${key}")` : ''}: the application is shutting down` +
        (doing === 'holding' ? '; the lock was released' : ''),
      { key },
    );
  }
}
