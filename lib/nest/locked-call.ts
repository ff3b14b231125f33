import { AsyncLocalStorage } from 'node:async_hooks';
import { defer, finalize, from, isObservable, mergeMap, of, throwError } from 'rxjs';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import type { Observable } from 'rxjs';
import type { LockEngine } from '../locking/engine/lock-engine.js';
import { runInPermitFrame } from '../locking/permits/permits.js';
import type { PermitHandle } from '../types/permit.types.js';
import type { LockHandle } from '../types/lock.types.js';
import { LockRegistry } from './lock-registry.js';
import type { LockRuntime } from './lock-registry.js';
import type { HeldByMethod, LockedMethodSpec } from './locked-method.js';
import { errorText, asError } from '../common/error-text.js';

type AnyMethod = (...args: unknown[]) => unknown;

/**
 * What the lock interceptor leaves in the async context for the one decorated handler it wraps: the handler
 * acquires with its resolved arguments and leaves the handle here; the interceptor releases it when the response
 * completes, errors or is unsubscribed.
 */
export interface DeferredRelease {
  /** The decorated method (the wrapper) this is for. */
  readonly target: unknown;
  readonly runtime: LockRuntime;
  taken: boolean;
  handle: HeldByMethod | undefined;
}

const STORAGE_KEY = Symbol.for('nest-redis-locks.deferred-release');
type GlobalWithStorage = typeof globalThis & { [STORAGE_KEY]?: AsyncLocalStorage<DeferredRelease> };

function deferredStorage(): AsyncLocalStorage<DeferredRelease> {
  const g = globalThis as GlobalWithStorage;
  return (g[STORAGE_KEY] ??= new AsyncLocalStorage<DeferredRelease>());
}

/** Runs `fn` with `deferred` waiting for its decorated method. */
export function runWithDeferredRelease<T>(deferred: DeferredRelease, fn: () => T): T {
  return deferredStorage().run(deferred, fn);
}

/** The deferred release waiting for `target` in this context, taken once. */
function takeDeferredRelease(target: unknown): DeferredRelease | undefined {
  const deferred = deferredStorage().getStore();
  if (!deferred || deferred.taken || deferred.target !== target) return undefined;
  deferred.taken = true;
  return deferred;
}

/**
 * Calls a decorated method under its lock. Three cases:
 * - called by Nest through the lock interceptor (a controller handler): acquire, run, and leave the handle to
 *   the interceptor, which releases it when the response completes, errors or is unsubscribed;
 * - a method declaring an `Observable` return: acquire on subscription, release when it completes;
 * - anything else: acquire, await the result, release.
 */
export function invokeLocked(
  spec: LockedMethodSpec,
  wrapper: AnyMethod,
  original: AnyMethod,
  self: unknown,
  args: unknown[],
): unknown {
  const deferred = takeDeferredRelease(wrapper);
  let runtime: LockRuntime;
  let keys: string[];
  try {
    runtime = deferred?.runtime ?? LockRegistry.get(spec.method);
    keys = spec.resolveKeys(args);
  } catch (err) {
    // The wrapper answers with a promise or an Observable: report a missing module or a bad key the same way,
    // never as a synchronous throw that escapes a caller's `.catch()`.
    return spec.returnsObservable ? throwError(() => err) : Promise.reject(asError(err));
  }
  const { engine } = runtime;
  if (deferred) {
    return (async () => {
      // A controller: a skipped request is not a success. Busy answers the conflict status, Redis failing 503.
      const handle = await acquireFor(engine, spec, keys, true);
      if (!handle) throw skippedRequest(spec, keys);
      deferred.handle = handle;
      return runUnder(engine, handle, () => original.apply(self, args));
    })();
  }
  if (spec.returnsObservable) {
    return defer(() =>
      engine.runInOwnerScope(() =>
        from(acquireFor(engine, spec, keys)).pipe(
          mergeMap((handle) =>
            !handle
              ? of(undefined)
              : (runUnder(engine, handle, () => original.apply(self, args)) as Observable<unknown>).pipe(
                  finalize(() => settleInBackground(runtime, spec, handle)),
                ),
          ),
        ),
      ),
    );
  }
  return engine.runInOwnerScope(async () => {
    const handle = await acquireFor(engine, spec, keys);
    // `ifLocked: 'skip'` and the lock busy (or Redis unavailable): the method is not run.
    if (!handle) return undefined;
    let result: unknown;
    try {
      result = await runUnder(engine, handle, () => original.apply(self, args));
    } catch (err) {
      await settle(runtime, spec, handle, false);
      throw err;
    }
    if (isObservable(result)) {
      // Undeclared Observable: keep the lock until it completes (declare `: Observable<T>` to lock lazily).
      return result.pipe(finalize(() => settleInBackground(runtime, spec, handle)));
    }
    await settle(runtime, spec, handle);
    return result;
  });
}

/**
 * Releases `handle` (never rejects for the release itself) and applies `onLockLost` if the lock was lost while
 * the method ran: rejects with the `LockLostError` for `'throw'`.
 */
async function settle(
  runtime: LockRuntime,
  spec: LockedMethodSpec,
  handle: HeldByMethod,
  applyLost = true,
): Promise<void> {
  // The signal of a lock handle is only ever aborted with a LockLostError.
  const lost = handle.signal.aborted ? (handle.signal.reason as Error) : undefined;
  await handle.release().catch((err: unknown) => {
    runtime.warn(`${spec.method}: releasing "${handle.key}" failed (its lease will free it): ${errorText(err)}`);
  });
  if (!lost || !applyLost) return;
  if (runtime.settings.onLockLost === 'warn') {
    runtime.warn(`${spec.method} ran on after losing its ${spec.mode} lock on "${handle.key}": ${errorText(lost)}`);
  } else if (runtime.settings.onLockLost === 'throw') {
    throw lost;
  }
}

/** `settle` from a teardown, where nothing can be thrown: a lost lock is logged even with `onLockLost: 'throw'`. */
export function settleInBackground(runtime: LockRuntime, spec: LockedMethodSpec, handle: HeldByMethod): void {
  settle(runtime, spec, handle).catch((err: unknown) => runtime.warn(`${spec.method}: ${errorText(err)}`));
}

/** The method's lock, or its permit for `@Semaphore` (one key); `null` when skipped (`ifLocked: 'skip'`). */
function acquireFor(
  engine: LockEngine,
  spec: LockedMethodSpec,
  keys: readonly string[],
  failWhenUnavailable = false,
): Promise<HeldByMethod | null> {
  if (spec.permitLimit === undefined) return engine.acquireOrSkipChecked(keys, spec.options, failWhenUnavailable);
  const { leaseMs, autoExtend, waitTimeoutMs, fair } = spec.options;
  return engine.acquirePermit(keys[0], { limit: spec.permitLimit, leaseMs, autoExtend, waitTimeoutMs, fair });
}

/** Runs `fn` with a lock as the current one, or inside a permit's call (nested acquisitions of it count it). */
function runUnder<T>(engine: LockEngine, held: HeldByMethod, fn: () => T): T {
  return 'limit' in held
    ? runInPermitFrame(engine.instanceId, held as PermitHandle, fn)
    : engine.runWithHandle(held as LockHandle, fn);
}

/** The conflict a controller answers for a request skipped because the lock was busy (`ifLocked: 'skip'`). */
function skippedRequest(spec: LockedMethodSpec, keys: readonly string[]): LockAcquireTimeoutError {
  return new LockAcquireTimeoutError({
    key: keys[0],
    keys,
    mode: spec.mode,
    waitedMs: 0,
    waitTimeoutMs: 0,
    limit: spec.permitLimit,
    skipped: true,
  });
}
