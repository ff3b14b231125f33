import type { PermitInfo } from '../types/permit.types.js';
import type { LockRef, LockStore } from './lock-store.js';

/** A semaphore as its store addresses it: the key and the limit the caller named. */
export interface PermitRef extends LockRef {
  readonly limit: number;
}

/** Whether `ref` names a semaphore (made by `PermitStore.permit`) rather than a lock. */
export function isPermitRef(ref: LockRef): ref is PermitRef {
  return (ref as Partial<PermitRef>).limit !== undefined;
}

/**
 * Where semaphores live. The `LockStore` calls take `PermitRef`s (the engine's waiting room, watchdog and hold keeper
 * serve permits as they serve locks: an acquisition takes one permit, `mode` is always `'write'`, a permit is never
 * re-entered), plus what only a semaphore has.
 */
export interface PermitStore extends LockStore {
  /** The store's handle on semaphore `key` (a valid key) for callers naming `limit`. */
  permit(key: string, limit: number): PermitRef;
  /** The limit stored for `key` as the last reply of this store said, if any. */
  storedLimit(key: string): number | undefined;
  inspectPermits(ref: PermitRef): Promise<PermitInfo | null>;
  /**
   * Frees one holder's permit (`token`), one owner's (`owner`), or all of them, whoever holds them. Resolves how many.
   */
  forceReleasePermits(ref: PermitRef, which: PermitHolder): Promise<number>;
  /** Stores `ref.limit` as the key's limit; resolves the limit before (0: none was stored). */
  setLimit(ref: PermitRef): Promise<number>;
}

/** Which permits a force release frees: one `token`'s, one `owner`'s (the id `inspectPermits` shows), or all (`{}`). */
export interface PermitHolder {
  readonly token?: string;
  readonly owner?: string;
}
