import { HttpException } from '@nestjs/common';
import type { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';

/**
 * HTTP answer for a decorated handler whose lock could not be acquired in time. Body:
 * `{ statusCode, error: 'Conflict', message, key, keys, waitedMs }`.
 */
export class LockConflictException extends HttpException {
  /** @param status HTTP status; default 409 (the module option `conflictStatus`). */
  constructor(error: LockAcquireTimeoutError, status = 409) {
    super(
      {
        statusCode: status,
        error: 'Conflict',
        message: `resource "${error.key}" is locked; try again later`,
        key: error.key,
        keys: error.keys,
        waitedMs: Math.round(error.waitedMs),
      },
      status,
      { cause: error },
    );
  }
}
