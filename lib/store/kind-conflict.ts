import { LockConfigError } from '../errors/lock-config.error.js';

/** The error for a call of one kind on a key the other kind lives under. */
export function kindConflict(key: string, found: 'lock' | 'semaphore'): LockConfigError {
  const message =
    found === 'lock'
      ? `"${key}" is held as a lock: a semaphore cannot use the same key (name the semaphore's key differently)`
      : `"${key}" is a semaphore: take it with acquirePermit / withPermit / @Semaphore, read it with inspectPermits and ` +
        `free it with forceReleasePermits (inspect and forceRelease are a lock's), or give the lock another key`;
  return new LockConfigError(message, 'key', key);
}
