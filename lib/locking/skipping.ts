import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { AcquireOptions, LockHandle, LockMode } from '../types/lock.types.js';
import type { LockEventBus } from './lock-events.js';
import { currentOwner } from './owner-context.js';

/**
 * `ifLocked: 'skip'`: one attempt (`tryAcquire`); when the lock is busy, or Redis cannot be reached or does not answer
 * in time (fail closed: the function must not run unlocked), resolves `null` after a `skipped` event that says why.
 * Other failures (an invalid key or option, an upgrade, shutdown) reject as they would when waiting.
 */
export async function acquireOrSkip(
  attempt: () => Promise<LockHandle | null>,
  events: LockEventBus,
  what: { readonly key: string; readonly kind: 'lock'; readonly mode: LockMode; readonly owner: string },
): Promise<LockHandle | null> {
  try {
    const handle = await attempt();
    if (!handle) events.emit('skipped', { ...what, reason: 'busy' });
    return handle;
  } catch (err) {
    if (!(err instanceof LockUnavailableError)) throw err;
    events.emit('skipped', { ...what, reason: 'unavailable', error: err });
    return null;
  }
}

/** What a `skipped` event says of a call on `keys` (its first key) in the current owner context. */
export function skipped(
  keys: string | readonly string[],
  options: AcquireOptions,
  instanceId: string,
): { key: string; kind: 'lock'; mode: LockMode; owner: string } {
  return {
    key: Array.isArray(keys) ? String(keys[0]) : String(keys),
    kind: 'lock',
    mode: options.mode ?? 'write',
    owner: currentOwner(instanceId).id,
  };
}
