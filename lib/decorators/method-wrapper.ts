import { LockConfigError } from '../errors/lock-config.error.js';

/** Any method, as a decorator sees it. */
export type AnyMethod = (...args: unknown[]) => unknown;

/** What runs in place of a wrapped method: `wrapper` is the function now on the class, `self` the call's `this`. */
export type WrappedCall = (wrapper: AnyMethod, self: unknown, args: unknown[]) => unknown;

/**
 * @internal Replaces a decorated method with a wrapper, as every decorator of the library that changes how a method
 * runs does (`@WriteLocked` / `@ReadLocked`, `@Semaphore`, `@ScheduledLock`): checks that the target is a method
 * (a `LockConfigError` naming `@decorator`, the `Class.method` and `option` otherwise), asks `prepare` for the call to
 * run instead (given the `Class.method` label, for messages, and the original function), and gives the wrapper the
 * original's `name`, `length` and every `Reflect` metadata key, so route, guard, pipe, schedule and Swagger metadata
 * written by decorators below this one survive (those written above land on the wrapper itself). Returns the wrapper.
 */
export function wrapMethod(
  decorator: string,
  option: string,
  target: object,
  propertyKey: string | symbol,
  descriptor: PropertyDescriptor,
  prepare: (method: string, original: AnyMethod) => WrappedCall,
): AnyMethod {
  const method = `${(target as { constructor: { name: string } }).constructor.name}.${String(propertyKey)}`;
  const original = descriptor.value as unknown;
  if (typeof original !== 'function') throw new LockConfigError(`@${decorator} on ${method}: not a method`, option);
  const fn = original as AnyMethod;
  const call = prepare(method, fn);
  const wrapper = function (this: unknown, ...args: unknown[]) {
    return call(wrapper, this, args);
  };
  Object.defineProperty(wrapper, 'name', { value: fn.name });
  Object.defineProperty(wrapper, 'length', { value: fn.length });
  for (const metaKey of Reflect.getMetadataKeys(fn)) {
    Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, fn), wrapper);
  }
  descriptor.value = wrapper;
  return wrapper;
}
