import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import type { AcquireOptions, LockHandle, LockMode } from '../../types/lock.types.js';
import type { LockEventBus, LockLogger } from '../events/lock-events.js';
import { currentOwner, runInOwnerScope } from '../holds/owner-context.js';
import { errorText } from '../../common/error-text.js';

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

/** What `withLock` needs of its engine (implemented by `LockEngine`). */
export interface LockedRunner {
  readonly instanceId: string;
  acquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle>;
  tryAcquire(keys: string | readonly string[], options?: AcquireOptions): Promise<LockHandle | null>;
  runWithHandle<T>(handle: LockHandle, fn: () => T): T;
}

/**
 * `withLock` on `engine`: acquires (or, with `ifLocked: 'skip'`, tries once), runs `fn(handle)` with the lock as the
 * current one, releases on success and on throw (a failed release is logged: the lease frees the lock).
 */
export function runLocked<T>(
  engine: LockedRunner,
  events: LockEventBus,
  logger: LockLogger,
  keys: string | readonly string[],
  fn: (lock: LockHandle) => T | Promise<T>,
  options: AcquireOptions | undefined,
): Promise<T | undefined> {
  return runInOwnerScope(engine.instanceId, async () => {
    const attempt = () => engine.tryAcquire(keys, options);
    const handle =
      options?.ifLocked === 'skip'
        ? await acquireOrSkip(attempt, events, skipped(keys, options, engine.instanceId))
        : await engine.acquire(keys, options);
    if (!handle) return undefined;
    try {
      return await engine.runWithHandle(handle, () => fn(handle));
    } finally {
      await handle.release().catch((err: unknown) => {
        logger.warn(`releasing "${handle.key}" failed (its lease will free it): ${errorText(err)}`);
      });
    }
  });
}
