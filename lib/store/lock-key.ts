/*
 * The rule every lock key obeys, whatever store holds the lock: part of the store contract, checked before a key
 * reaches any store (decorators, engine, leaders, scheduled jobs, board and CLI check with this one function).
 */

import { LockKeyError } from '../errors/lock-key.error.js';

/** Longest lock key accepted, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;

/** Throws `LockKeyError` unless `key` is a non-empty string of at most 1024 bytes that can form a hash tag. */
export function validateLockKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyError(`invalid lock key: expected a string, got ${describe(key)}`, key);
  }
  if (key.length === 0) throw new LockKeyError('invalid lock key: the key is empty', key, key);
  if (!isWellFormed(key)) {
    // A lone surrogate has no UTF-8 form: Node would write U+FFFD, so distinct keys would share one lock.
    throw new LockKeyError(
      `invalid lock key ${JSON.stringify(key.slice(0, 40))}: not well-formed UTF-16 (a lone surrogate at index ${loneSurrogateAt(key)})`,
      key,
      key,
    );
  }
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > MAX_KEY_BYTES) {
    throw new LockKeyError(
      `invalid lock key "${key.slice(0, 40)}…": ${bytes} bytes, the limit is ${MAX_KEY_BYTES}`,
      key,
      key,
    );
  }
  if (key.startsWith('}')) {
    // `{}` would be an empty hash tag: Redis Cluster would then hash each full name separately.
    throw new LockKeyError(`invalid lock key "${key}": a key cannot start with '}'`, key, key);
  }
  return key;
}

/** Whether `s` has no lone surrogate (`String.prototype.isWellFormed`, Node 20+). */
function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

function loneSurrogateAt(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}
