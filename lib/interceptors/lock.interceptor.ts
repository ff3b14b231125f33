import { BadRequestException, ServiceUnavailableException } from '@nestjs/common';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, throwError } from 'rxjs';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockClosedError } from '../errors/lock-closed.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LOCKED_METADATA } from '../decorators/locked.constants.js';
import type { LockedMethodSpec } from '../decorators/locked.constants.js';
import { settleInBackground } from '../decorators/invoke-locked.js';
import type { LockHandle } from '../locking/lock.types.js';
import type { DeferredReleaseSlot } from '../locking/owner-context.js';
import { LockRegistry } from '../nest/lock-registry.js';
import type { LockRuntime } from '../nest/lock-registry.js';
import { LockConflictException } from './lock-conflict.exception.js';

/**
 * Registered by the lock decorators on their method. For a handler Nest calls (HTTP, microservice, gateway), it
 * gives the decorated method a slot in a fresh owner context; the method acquires the lock with its resolved
 * arguments and leaves the handle there; the interceptor releases it when the response Observable completes,
 * errors or is unsubscribed (so a streamed or Observable response stays locked to the end). On HTTP it maps
 * `LockAcquireTimeoutError` to 409 (`conflictStatus`), `LockKeyError` to 400 and `LockClosedError` (shutting
 * down) to 503; other errors pass untouched.
 */
export class LockInterceptor implements NestInterceptor {
  /** Maps lock errors of an HTTP handler to HTTP exceptions; override to change the mapping. */
  protected mapHttpError(err: unknown, runtime: LockRuntime): unknown {
    if (err instanceof LockAcquireTimeoutError) return new LockConflictException(err, runtime.conflictStatus);
    if (err instanceof LockKeyError) {
      return new BadRequestException({ statusCode: 400, error: 'Bad Request', message: err.message }, { cause: err });
    }
    if (err instanceof LockClosedError) {
      return new ServiceUnavailableException({ statusCode: 503, error: 'Service Unavailable', message: err.message }, { cause: err });
    }
    return err;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    const spec = Reflect.getMetadata(LOCKED_METADATA, handler) as LockedMethodSpec | undefined;
    const runtime = LockRegistry.find();
    // Without a runtime, the decorated method itself throws its "not initialised" error.
    if (!spec || !runtime) return next.handle();
    const http = context.getType() === 'http';
    return new Observable<unknown>((subscriber) => {
      const slot: DeferredReleaseSlot = { target: handler, used: false, handle: undefined };
      const inner = runtime.engine.runWithSlot(slot, () =>
        next
          .handle()
          .pipe(catchError((err: unknown) => throwError(() => (http ? this.mapHttpError(err, runtime) : err))))
          .subscribe(subscriber),
      );
      return () => {
        inner.unsubscribe();
        if (slot.handle) settleInBackground(runtime, spec, slot.handle as LockHandle);
      };
    });
  }
}

/** The one instance the decorators register (it keeps no state of its own). */
export const lockInterceptor = new LockInterceptor();
