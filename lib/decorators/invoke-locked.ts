import { defer, finalize, from, isObservable, mergeMap, throwError } from 'rxjs';
import type { Observable } from 'rxjs';
import type { LockHandle } from '../locking/lock.types.js';
import type { LockRuntime } from '../nest/lock-registry.js';
import { LockRegistry } from '../nest/lock-registry.js';
import type { LockedMethodSpec } from './locked.constants.js';

type AnyMethod = (...args: unknown[]) => unknown;

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
  let runtime: LockRuntime;
  let keys: string[];
  try {
    runtime = LockRegistry.get(spec.method);
    keys = spec.resolveKeys(args);
  } catch (err) {
    // The wrapper answers with a promise or an Observable: report a missing module or a bad key the same way,
    // never as a synchronous throw that escapes a caller's `.catch()`.
    return spec.returnsObservable ? throwError(() => err) : Promise.reject(err);
  }
  const { engine } = runtime;
  const slot = engine.takeSlot(wrapper);
  if (slot) {
    return (async () => {
      const handle = await engine.acquire(keys, spec.options);
      slot.handle = handle;
      return engine.runWithHandle(handle, () => original.apply(self, args));
    })();
  }
  if (spec.returnsObservable) {
    return defer(() =>
      engine.runInOwnerScope(() =>
        from(engine.acquire(keys, spec.options)).pipe(
          mergeMap((handle) =>
            (engine.runWithHandle(handle, () => original.apply(self, args)) as Observable<unknown>).pipe(
              finalize(() => settleInBackground(runtime, spec, handle)),
            ),
          ),
        ),
      ),
    );
  }
  return engine.runInOwnerScope(async () => {
    const handle = await engine.acquire(keys, spec.options);
    let result: unknown;
    try {
      result = await engine.runWithHandle(handle, () => original.apply(self, args));
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
 * Releases `handle` (never throws for the release itself) and applies `onLockLost` if the lock was lost while
 * the method ran: returns the error to throw for `'throw'`.
 */
export async function settle(runtime: LockRuntime, spec: LockedMethodSpec, handle: LockHandle, applyLost = true): Promise<void> {
  const lost = handle.signal.aborted ? handle.signal.reason : undefined;
  await handle.release().catch((err: unknown) => {
    runtime.warn(`${spec.method}: releasing "${handle.key}" failed (its lease will free it): ${String(err)}`);
  });
  if (!lost || !applyLost) return;
  if (runtime.onLockLost === 'warn') {
    runtime.warn(`${spec.method} ran on after losing its ${spec.mode} lock on "${handle.key}": ${String((lost as Error).message ?? lost)}`);
  } else if (runtime.onLockLost === 'throw') {
    throw lost;
  }
}

/** `settle` from a teardown, where nothing can be thrown: a lost lock is logged even with `onLockLost: 'throw'`. */
export function settleInBackground(runtime: LockRuntime, spec: LockedMethodSpec, handle: LockHandle): void {
  settle(runtime, spec, handle).catch((err: unknown) => {
    runtime.warn(`${spec.method}: ${err instanceof Error ? err.message : String(err)}`);
  });
}
