import { LockError } from './lock.error.js';

/** Why a held lock was lost. */
export type LockLostReason =
  /** Redis no longer has this hold: the lease ran out there, it was force-released, or Redis lost its data. */
  | 'not-in-redis'
  /** The lease ran out before a renewal could be confirmed (autoExtend off, or Redis unreachable). */
  | 'lease-expired';

/** A lock was lost while held. Aborts the handle's `signal`; the `lost` event carries it too. */
export class LockLostError extends LockError {
  declare readonly key: string;
  readonly reason: LockLostReason;

  constructor(key: string, reason: LockLostReason, cause?: unknown) {
    const detail =
      reason === 'lease-expired'
        ? 'its lease ran out before it could be renewed (raise leaseMs, or keep autoExtend on)'
        : 'Redis no longer records this hold (lease ran out, forceRelease, or Redis lost its data)';
    super(`lost the lock on "${key}": ${detail}`, { key, cause });
    this.reason = reason;
  }
}
