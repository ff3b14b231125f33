import { HttpException } from '@nestjs/common';
import type { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';

/**
 * HTTP answer for a decorated handler that did not get its lock or permit. Body: `{ statusCode, error: 'Conflict',
 * kind, message, key, keys, mode | limit, skipped, waitedMs }`, where `kind` is `'lock'` (with its `mode`) or
 * `'semaphore'` (with its `limit`), and `skipped` is `true` for a route with `ifLocked: 'skip'` that was not run. The
 * message says what was busy, for how long the request waited, and that a retry may succeed. The default mapper
 * sends `Retry-After` with it.
 */
export class LockConflictException extends HttpException {
  /** @param status HTTP status; default 409 (the module option `conflictStatus`). */
  constructor(error: LockAcquireTimeoutError, status = 409) {
    const semaphore = error.limit !== undefined;
    const what = semaphore
      ? `semaphore "${error.key}" has no free permit (limit ${error.limit})`
      : `the ${error.mode} lock on "${error.key}" is held by someone else`;
    const outcome = error.skipped
      ? `, and this route does not wait for it (ifLocked: 'skip'): not run`
      : semaphore
        ? `: none was freed within ${error.waitTimeoutMs} ms`
        : `: not acquired within ${error.waitTimeoutMs} ms`;
    super(
      {
        statusCode: status,
        error: 'Conflict',
        kind: semaphore ? 'semaphore' : 'lock',
        message: `${what}${outcome}; retry later`,
        key: error.key,
        keys: error.keys,
        ...(semaphore ? { limit: error.limit } : { mode: error.mode }),
        skipped: error.skipped,
        waitedMs: Math.round(error.waitedMs),
      },
      status,
      { cause: error },
    );
  }
}
