import { LockError } from './lock.error.js';

/** What the caller was doing with a lock when the lock service closed. */
export type LockClosedDuring =
  | 'acquiring'
  /** Holding it: the shutdown released it (the hold ended before its release was sent). */
  | 'holding'
  /** Leading: the leadership's term that this shutdown ends. */
  | { readonly leader: string; readonly term: number };

/**
 * The lock service is shutting down or closed: waiting acquisitions are rejected, new ones refused, and the holds it
 * releases itself end with this (their signal aborts with it before the release is sent); a leader is told it was
 * leading.
 */
export class LockClosedError extends LockError {
  constructor(key?: string, during: LockClosedDuring = 'acquiring') {
    const what =
      typeof during === 'object'
        ? ` while leading "${during.leader}" (term ${during.term})`
        : key
          ? ` (${during} "${key}")`
          : '';
    super(
      `the lock service is closed${what}: the application is shutting down` +
        (during === 'holding' ? '; the lock was released' : ''),
      { key },
    );
  }
}
