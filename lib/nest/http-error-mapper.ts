import { BadRequestException, ServiceUnavailableException } from '@nestjs/common';
import type { ExecutionContext } from '@nestjs/common';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockClosedError } from '../errors/lock-closed.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LOCK_UNAVAILABLE_RETRY_AFTER_S, LockUnavailableError } from '../errors/lock-unavailable.error.js';
import { LockConflictException } from './lock-conflict.exception.js';

/**
 * Turns what a lock-decorated HTTP handler threw into what the client gets. Set one with the module option
 * `httpErrorMapper`; extend `DefaultLockHttpErrorMapper` to change one case and keep the others.
 *
 * @example
 * class LockedIs423 extends DefaultLockHttpErrorMapper {
 *   protected override conflict(error: LockAcquireTimeoutError): unknown {
 *     return new HttpException({ message: `retry "${error.key}" later` }, 423);
 *   }
 * }
 * RedisLockModule.forRoot({ redis, httpErrorMapper: new LockedIs423() });
 */
export interface LockHttpErrorMapper {
  /**
   * Returns what to throw instead of `error` (usually an `HttpException`), or `error` itself to pass it on. Called
   * for every error of a lock-decorated controller handler, the handler's own errors included.
   */
  map(error: unknown, context: ExecutionContext): unknown;
}

/**
 * The default mapping: `LockAcquireTimeoutError` (a lock or a permit not granted in time, or a route skipped with
 * `ifLocked: 'skip'`) → 409 (`LockConflictException`, status from `conflictStatus`) with `Retry-After`,
 * `LockKeyError` → 400, `LockUnavailableError` (Redis down, slow, refusing) → 503 with `Retry-After`,
 * `LockClosedError` (this instance shutting down; another may serve) → 503 with `Retry-After`; every other error
 * passes untouched.
 */
export class DefaultLockHttpErrorMapper implements LockHttpErrorMapper {
  /**
   * @param conflictStatus status of a lock timeout, default 409.
   * @param retryAfterSeconds `Retry-After` sent with the conflict and the 503s, default 1.
   */
  constructor(
    protected readonly conflictStatus = 409,
    protected readonly retryAfterSeconds = LOCK_UNAVAILABLE_RETRY_AFTER_S,
  ) {}

  map(error: unknown, context: ExecutionContext): unknown {
    if (error instanceof LockAcquireTimeoutError) return this.conflict(error, context);
    if (error instanceof LockKeyError) return this.badKey(error);
    if (error instanceof LockUnavailableError) return this.unavailable(error, context);
    if (error instanceof LockClosedError) return this.closed(error, context);
    return error;
  }

  /**
   * Redis could not serve the lock (unreachable, no answer within `commandTimeoutMs`, refused, ACL denial): 503
   * with `Retry-After`, and a body naming the key, the operation and the reason (never the Redis error itself).
   */
  protected unavailable(error: LockUnavailableError, context: ExecutionContext): unknown {
    setResponseHeader(context, 'Retry-After', String(this.retryAfterSeconds));
    return new ServiceUnavailableException(
      {
        statusCode: 503,
        error: 'Service Unavailable',
        message: `the lock on "${error.key ?? ''}" is unavailable: Redis ${REASON_TEXT[error.reason]}; retry later`,
        key: error.key,
        reason: error.reason,
      },
      { cause: error },
    );
  }

  /**
   * The lock or permit was not granted within `waitTimeoutMs`, or a route with `ifLocked: 'skip'` found it busy:
   * the conflict status with `Retry-After`, and a body naming the kind, the key and the limit of a semaphore.
   */
  protected conflict(error: LockAcquireTimeoutError, context: ExecutionContext): unknown {
    setResponseHeader(context, 'Retry-After', String(this.retryAfterSeconds));
    return new LockConflictException(error, this.conflictStatus);
  }

  /** A key template resolved to an invalid key (missing, null or empty parameter). */
  protected badKey(error: LockKeyError): unknown {
    return new BadRequestException({ statusCode: 400, error: 'Bad Request', message: error.message }, { cause: error });
  }

  /** The application is shutting down: another instance may serve a retry. */
  protected closed(error: LockClosedError, context: ExecutionContext): unknown {
    setResponseHeader(context, 'Retry-After', String(this.retryAfterSeconds));
    return new ServiceUnavailableException(
      { statusCode: 503, error: 'Service Unavailable', message: error.message },
      { cause: error },
    );
  }
}

const REASON_TEXT: Record<LockUnavailableError['reason'], string> = {
  unreachable: 'cannot be reached',
  timeout: 'did not answer in time',
  refused: 'refused the command',
  'permission-denied': 'denied the command (permissions)',
  'not-replicated': 'replicas did not confirm the lock',
};

/**
 * Sets a header on the HTTP response, on Express (`setHeader`) and Fastify (`header`) alike; nothing for a context
 * that has no HTTP response.
 */
function setResponseHeader(context: ExecutionContext, name: string, value: string): void {
  if (typeof context?.switchToHttp !== 'function') return;
  const response = context
    .switchToHttp()
    .getResponse<{ header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown }>();
  if (typeof response?.header === 'function') response.header(name, value);
  else if (typeof response?.setHeader === 'function') response.setHeader(name, value);
}
