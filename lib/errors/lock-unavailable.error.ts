import { LockError } from './lock.error.js';

/** Why Redis could not serve a lock operation. */
export type LockUnavailableReason =
  /** No connection to Redis (refused, reset, reconnecting, or the client gave up). */
  | 'unreachable'
  /** Redis did not answer within `commandTimeoutMs` (paused, overloaded, or cut off by the network). */
  | 'timeout'
  /** Redis answered with an error other than a permission denial (e.g. `READONLY`, `OOM`, `BUSY`, `LOADING`). */
  | 'refused'
  /** The Redis user lacks a command or channel right the library needs (an ACL denial; see `missing`). */
  | 'permission-denied'
  /** The replicas did not acknowledge the grant in time (`waitForReplicas`). */
  | 'not-replicated';

/** What the library was doing when Redis failed it. */
export type LockOperation =
  'acquire' | 'release' | 'renew' | 'extend' | 'inspect' | 'forceRelease' | 'cancelWait' | 'keepWaiting' | 'subscribe';

/** Retry hint, in seconds, that the HTTP layer sends as `Retry-After` with the 503 for this error. */
export const LOCK_UNAVAILABLE_RETRY_AFTER_S = 1;

/**
 * Redis could not serve a lock operation: unreachable, too slow (`commandTimeoutMs`), refused the command, denied
 * it by ACL, or the replicas did not acknowledge. `cause` is the underlying error, when there is one. Nothing was
 * granted: a grant that reached Redis anyway is undone by the library as soon as Redis answers again.
 */
export class LockUnavailableError extends LockError {
  declare readonly key: string | undefined;
  readonly operation: LockOperation;
  readonly reason: LockUnavailableReason;
  /** For `permission-denied`: the command (e.g. `PUBLISH`) or channel (e.g. `channel lock:{a}:wake`) the user lacks. */
  readonly missing: string | undefined;

  constructor(details: {
    key?: string;
    operation: LockOperation;
    reason: LockUnavailableReason;
    detail: string;
    missing?: string;
    cause?: unknown;
  }) {
    const on = details.key === undefined ? '' : ` "${details.key}"`;
    super(`${details.operation}${on}: Redis unavailable (${details.reason}): ${details.detail}`, {
      key: details.key,
      cause: details.cause,
    });
    this.operation = details.operation;
    this.reason = details.reason;
    this.missing = details.missing;
  }
}
