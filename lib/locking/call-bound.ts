import { LockKeyError } from '../errors/lock-key.error.js';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import { validateLockKey } from '../redis/key-layout.js';
import type { LockHandle } from '../types/lock.types.js';
import { errorText } from './lock-events.js';
import type { LockLogger } from './lock-events.js';

// Around each acquisition of `LockEngine`: the keys checked and put in lock order, and the engine's own bound on
// the call (whatever path inside it is slow).

/** Slack on top of the documented bound of a call before the engine itself settles it, in milliseconds. */
export const BOUND_MARGIN_MS = 50;

/**
 * `acquisition`, or a `LockUnavailableError` once `ms` passed: the engine's own guarantee that a call settles
 * in time, whatever path inside it was slow. A handle granted after that is released at once.
 */
export function settleWithin(acquisition: Promise<LockHandle | null>, ms: number, key: string, logger: LockLogger): Promise<LockHandle | null> {
  return new Promise((resolve, reject) => {
    let late = false;
    let settled = false;
    const timer = setTimeout(() => setImmediate(() => giveUp()), ms);
    const giveUp = () => {
      if (settled) return;
      late = true;
      settled = true;
      reject(
        new LockUnavailableError({
          key,
          operation: 'acquire',
          reason: 'timeout',
          detail: `the acquisition did not settle within waitTimeoutMs + commandTimeoutMs (${ms - BOUND_MARGIN_MS} ms): Redis answers too slowly`,
        }),
      );
    };
    acquisition.then(
      (handle) => {
        clearTimeout(timer);
        settled = true;
        if (!late) return resolve(handle);
        handle?.release().catch((err: unknown) => logger.warn(`releasing "${key}" granted too late failed: ${errorText(err)}`));
      },
      (err: unknown) => {
        clearTimeout(timer);
        if (late) return;
        settled = true;
        // As the acquisition rejected: an aborted wait rejects with the signal's own reason, whatever it is.
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(err);
      },
    );
  });
}

/** Every key of `input`, checked (holes in an array are checked as `undefined`, so they are rejected). */
export function validateKeys(input: string | readonly string[]): readonly string[] {
  if (!Array.isArray(input)) return [validateLockKey(input)];
  const list = input as readonly unknown[];
  if (list.length === 0) throw new LockKeyError('invalid lock keys: the array is empty', input);
  const keys: string[] = [];
  for (let i = 0; i < list.length; i++) keys.push(validateLockKey(list[i]));
  return keys;
}

/** The lock order: unique keys, sorted, so two callers locking [a, b] and [b, a] cannot deadlock. */
export function lockOrder(keys: readonly string[]): readonly string[] {
  return keys.length === 1 ? keys : [...new Set(keys)].sort();
}
