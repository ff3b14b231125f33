import { UseInterceptors } from '@nestjs/common';
import { Observable } from 'rxjs';
import { LockConfigError } from '../errors/lock-config.error.js';
import type { AcquireOptions, LockMode } from '../types/lock.types.js';
import { lockInterceptor } from '../nest/lock.interceptor.js';
import { invokeLocked } from '../nest/locked-call.js';
import { LOCKED_METADATA } from '../nest/locked-method.js';
import type { LockedMethodSpec } from '../nest/locked-method.js';
import { compileKeySpec } from './key-template.js';
import type { LockKeySpec } from './key-template.js';
import { parameterNames } from './parameter-names.js';
import { wrapMethod } from './method-wrapper.js';

/** Options of the lock decorators: `AcquireOptions` without `mode` (the decorator sets it) and `signal`. */
export type LockedOptions = Omit<AcquireOptions, 'mode' | 'signal'>;

/**
 * Builds `@WriteLocked` / `@ReadLocked`. The decorator wraps the method (so it never runs unlocked, whoever
 * calls it), keeps every metadata key, `name` and `length`, and registers the lock interceptor so that on a
 * controller the lock lasts until the response completes.
 */
export function createLockDecorator(mode: LockMode) {
  return (key: LockKeySpec, options: LockedOptions = {}): MethodDecorator =>
    (target, propertyKey, descriptor) =>
      wrapLockedMethod(
        mode === 'write' ? 'WriteLocked' : 'ReadLocked',
        target,
        propertyKey,
        descriptor,
        (method, names) => ({
          method,
          mode,
          options: { ...options, mode },
          resolveKeys: compileKeySpec(key, names, method),
          returnsObservable: Reflect.getMetadata('design:returntype', target, propertyKey) === Observable,
        }),
      );
}

/**
 * @internal Wraps a decorated method (so it never runs unlocked, whoever calls it: see `wrapMethod`), records its
 * `LockedMethodSpec` and registers the lock interceptor. Shared by the lock decorators and `@Semaphore`.
 */
export function wrapLockedMethod(
  decorator: string,
  target: object,
  propertyKey: string | symbol,
  descriptor: PropertyDescriptor,
  makeSpec: (method: string, parameterNames: readonly (string | null)[]) => LockedMethodSpec,
): PropertyDescriptor {
  let spec: LockedMethodSpec | undefined;
  const wrapper = wrapMethod(decorator, 'key', target, propertyKey, descriptor, (method, original) => {
    if (Reflect.getMetadata(LOCKED_METADATA, original)) {
      throw new LockConfigError(
        `${method} has two lock or semaphore decorators; use one (a lock decorator takes an array of keys)`,
        'key',
      );
    }
    const made = makeSpec(method, parameterNames(original));
    spec = made;
    return (wrapper, self, args) => invokeLocked(made, wrapper, original, self, args);
  });
  Reflect.defineMetadata(LOCKED_METADATA, spec, wrapper);
  UseInterceptors(lockInterceptor)(target, propertyKey, descriptor as TypedPropertyDescriptor<unknown>);
  return descriptor;
}
