import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { LockHandle, LockMode } from '../types/lock.types.js';
import type { LockEventBus } from './lock-events.js';

/**
 * `ifLocked: 'skip'`: one attempt (`tryAcquire`); when the lock is busy, or Redis cannot be reached or does not answer
 * in time (fail closed: the function must not run unlocked), resolves `null` after a `skipped` event that says why.
 * Other failures (an invalid key or option, an upgrade, shutdown) reject as they would when waiting.
 */
export async function acquireOrSkip(
  attempt: () => Promise<LockHandle | null>,
  events: LockEventBus,
  what: { readonly key: string; readonly mode: LockMode; readonly owner: string },
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
