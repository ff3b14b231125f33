import type { LockMode } from '../types/lock.types.js';
import { LockError } from './lock.error.js';

/**
 * The lock (or a permit of a semaphore) could not be acquired within `waitTimeoutMs`. Mapped to HTTP 409 on
 * controllers.
 */
export class LockAcquireTimeoutError extends LockError {
  declare readonly key: string;
  /** Every key of the request (one element for a single-key call). */
  readonly keys: readonly string[];
  readonly mode: LockMode;
  /** How long the caller waited, in milliseconds. */
  readonly waitedMs: number;
  /** The `waitTimeoutMs` in force, in milliseconds. */
  readonly waitTimeoutMs: number;
  /** For a semaphore's permit, the limit asked for (the stored one may differ); `undefined` for a lock. */
  readonly limit: number | undefined;
  /**
   * `true` when the call did not wait at all: a decorated route with `ifLocked: 'skip'` whose lock was busy (the
   * route was not run).
   */
  readonly skipped: boolean;

  constructor(args: {
    key: string;
    keys: readonly string[];
    mode: LockMode;
    waitedMs: number;
    waitTimeoutMs: number;
    limit?: number;
    skipped?: boolean;
  }) {
    const what =
      args.limit === undefined
        ? `acquire the ${args.mode} lock on "${args.key}"`
        : `get a permit of semaphore "${args.key}" (limit ${args.limit})`;
    super(
      args.skipped
        ? `could not ${what} at once: it is busy, and with ifLocked: 'skip' the call does not wait (it was not run)`
        : `could not ${what} within ${args.waitTimeoutMs} ms ` +
            `(waited ${Math.round(args.waitedMs)} ms); raise the waitTimeoutMs option to wait longer`,
      { key: args.key },
    );
    this.skipped = args.skipped ?? false;
    this.keys = args.keys;
    this.mode = args.mode;
    this.waitedMs = args.waitedMs;
    this.waitTimeoutMs = args.waitTimeoutMs;
    this.limit = args.limit;
  }
}
