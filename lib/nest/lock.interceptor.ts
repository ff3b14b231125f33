import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, throwError } from 'rxjs';
import type { MonoTypeOperatorFunction } from 'rxjs';
import { LockRegistry } from './lock-registry.js';
import { runWithDeferredRelease, settleInBackground } from './locked-call.js';
import type { DeferredRelease } from './locked-call.js';
import type { LockRuntime } from './lock-registry.js';
import { LOCKED_METADATA } from './locked-method.js';
import type { LockedMethodSpec } from './locked-method.js';

/**
 * Registered by the lock decorators on their method. For a handler Nest calls (HTTP, microservice, gateway), it
 * leaves a deferred release in the async context: the decorated method acquires the lock with its resolved
 * arguments and leaves the handle there, and the interceptor releases it when the response Observable completes,
 * errors or is unsubscribed (so a streamed or Observable response stays locked to the end). On HTTP, errors go
 * through the module's `httpErrorMapper`.
 */
export class LockInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    const spec = Reflect.getMetadata(LOCKED_METADATA, handler) as LockedMethodSpec | undefined;
    const runtime = LockRegistry.find();
    // Without a runtime, the decorated method itself rejects with its "not initialised" error.
    if (!spec || !runtime) return next.handle();
    const mapper = context.getType() === 'http' ? runtime.settings.httpErrorMapper : undefined;
    return new Observable<unknown>((subscriber) => {
      const deferred: DeferredRelease = { target: handler, runtime, taken: false, handle: undefined };
      // One owner for the whole response: work the returned Observable does later re-enters the handler's lock.
      const inner = runtime.engine.runInOwnerScope(() =>
        runWithDeferredRelease(deferred, () =>
          next
            .handle()
            .pipe(
              failIfLost(deferred, runtime),
              catchError((err: unknown) => throwError(() => (mapper ? mapper.map(err, context) : err))),
            )
            .subscribe(subscriber),
        ),
      );
      return () => {
        inner.unsubscribe();
        if (deferred.handle) settleInBackground(runtime, spec, deferred.handle);
      };
    });
  }
}

/**
 * With `onLockLost: 'throw'`: a handler whose lock was found lost by the time its answer completes answers the
 * `LockLostError` instead (the release at teardown comes after the response and could only log it). A loss noticed
 * later, at the watchdog's next renewal, is not seen here.
 */
function failIfLost<T>(deferred: DeferredRelease, runtime: LockRuntime): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) =>
      source.subscribe({
        next: (value) => subscriber.next(value),
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          const signal = runtime.settings.onLockLost === 'throw' ? deferred.handle?.signal : undefined;
          if (signal?.aborted) subscriber.error(signal.reason);
          else subscriber.complete();
        },
      }),
    );
}

/** The one instance the decorators register (it keeps no state of its own). */
export const lockInterceptor = new LockInterceptor();
