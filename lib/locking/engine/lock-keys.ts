import { LockKeyError } from '../../errors/lock-key.error.js';
import { validateLockKey } from '../../store/lock-key.js';

// The keys of one acquisition: checked, then put in the one order every caller takes them in.

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
