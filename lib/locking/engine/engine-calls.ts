import { LockKeyError } from '../../errors/lock-key.error.js';
import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import { performance } from 'node:perf_hooks';
import { LockClosedError } from '../../errors/lock-closed.error.js';
import type { AcquireOptions, LockHandle } from '../../types/lock.types.js';
import type { Acquirer } from '../acquire/acquisition.js';
import { resolveAcquireOptions } from '../settings/engine-settings.js';
import type { LockEngineSettings } from '../settings/engine-settings.js';
import { currentOwner } from '../holds/owner-context.js';
import { lockOrder } from './lock-keys.js';
import type { LockEventBus, LockLogger } from '../events/lock-events.js';
import { acquireOrSkip, skipped } from '../acquire/skipping.js';
import { errorText, asError } from '../../common/error-text.js';

// Around each acquisition of `LockEngine`: the keys put in lock order (`lock-keys.ts`), and the engine's own bound
// on the call (whatever path inside it is slow).

/** Slack on top of the documented bound of a call before the engine itself settles it, in milliseconds. */
export const BOUND_MARGIN_MS = 50;

/**
 * `acquisition`, or a `LockUnavailableError` once `ms` passed: the engine's own guarantee that a call settles
 * in time, whatever path inside it was slow. A handle granted after that is released at once.
 */
export function settleWithin(
  acquisition: Promise<LockHandle | null>,
  ms: number,
  key: string,
  logger: LockLogger,
): Promise<LockHandle | null> {
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
        handle
          ?.release()
          .catch((err: unknown) => logger.warn(`releasing "${key}" granted too late failed: ${errorText(err)}`));
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

/** The acquisitions of one engine: each checked, bounded, and tracked so that `close` can wait for them. */
export class EngineCalls {
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly settings: LockEngineSettings,
    private readonly acquirer: Acquirer,
    private readonly instanceId: string,
    private readonly logger: LockLogger,
    private readonly closed: () => boolean,
  ) {}

  /** Checks keys and options (rejecting, never throwing), then acquires in the current owner context. */
  run(
    keys: () => readonly string[],
    options: AcquireOptions | undefined,
    waiting: boolean,
  ): Promise<LockHandle | null> {
    let acquisition: Promise<LockHandle | null>;
    let boundMs: number;
    let first: string;
    try {
      const ordered = lockOrder(keys());
      if (ordered.length === 0) throw new LockKeyError('invalid lock keys: no key given', ordered);
      first = ordered[0];
      const resolved = resolveAcquireOptions(this.settings, options, first);
      if (this.closed()) throw new LockClosedError(first);
      boundMs = (waiting ? resolved.waitTimeoutMs : 0) + this.settings.commandTimeoutMs;
      const settleBy = performance.now() + boundMs;
      acquisition = this.acquirer.acquire({
        owner: currentOwner(this.instanceId),
        keys: ordered,
        options: resolved,
        waiting,
        settleBy,
      });
    } catch (err) {
      // Bad keys or options: reported as a rejection, like every other failure of an acquisition.
      return Promise.reject(asError(err));
    }
    return this.track(acquisition, boundMs, first);
  }

  /**
   * The decorators' acquisition for checked keys: waits (`ifLocked: 'wait'`), or one attempt that resolves `null`
   * after a `skipped` event when the lock is busy (and, unless `failWhenUnavailable`, when Redis cannot be reached:
   * then it rejects as `tryAcquire` does).
   */
  runOrSkip(
    keys: readonly string[],
    options: AcquireOptions | undefined,
    events: LockEventBus,
    failWhenUnavailable: boolean,
  ): Promise<LockHandle | null> {
    if (options?.ifLocked !== 'skip') return this.run(() => keys, options, true);
    const what = skipped(keys, options, this.instanceId);
    const attempt = () => this.run(() => keys, options, false);
    if (!failWhenUnavailable) return acquireOrSkip(attempt, events, what);
    return attempt().then((handle) => {
      if (!handle) events.emit('skipped', { ...what, reason: 'busy' });
      return handle;
    });
  }

  /**
   * Tracks an acquisition so `close` waits for it, and settles it within `boundMs` (plus a margin) whatever happens.
   */
  track(acquisition: Promise<LockHandle | null>, boundMs: number, key: string): Promise<LockHandle | null> {
    this.inflight.add(acquisition);
    const forget = () => this.inflight.delete(acquisition);
    acquisition.then(forget, forget);
    return boundMs === Number.POSITIVE_INFINITY
      ? acquisition
      : settleWithin(acquisition, boundMs + BOUND_MARGIN_MS, key, this.logger);
  }

  /** Resolves once every acquisition in flight settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }
}
