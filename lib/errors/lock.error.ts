/**
 * Marks every error of this library. `Symbol.for` keys are shared by the whole process, so the ESM and the
 * CommonJS build of the package (both loaded in one process, e.g. an ESM app using a CommonJS dependency that
 * requires this package) put the same brand on their errors.
 */
const LOCK_ERROR_BRAND = Symbol.for('nest-redis-locks.error');

/** The classes `instanceof` may be asked about: this one and its subclasses. */
type ErrorClass = abstract new (...args: never[]) => Error;

/** Base class of every error this library throws; `instanceof LockError` catches them all. */
export class LockError extends Error {
  /** The lock key concerned, when there is one (for multi-key calls, the key that failed). */
  readonly key: string | undefined;

  constructor(message: string, options: { key?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.key = options.key;
  }

  /**
   * `err instanceof LockAcquireTimeoutError` (or any error class of this library) also holds for an error
   * thrown by the other build of the package loaded in the same process, where the ordinary prototype check
   * fails because each build has its own classes. Such an error counts when it carries the library's brand
   * and a class of the same name appears in its prototype chain below `Error`; without the brand, only the
   * ordinary prototype check counts.
   */
  static override [Symbol.hasInstance]<C extends ErrorClass>(this: C, value: unknown): value is InstanceType<C> {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (
      typeof value !== 'object' ||
      value === null ||
      (value as { [LOCK_ERROR_BRAND]?: unknown })[LOCK_ERROR_BRAND] !== true
    ) {
      return false;
    }
    for (let proto: unknown = Object.getPrototypeOf(value); proto !== null; proto = Object.getPrototypeOf(proto)) {
      const ctor = Object.prototype.hasOwnProperty.call(proto, 'constructor')
        ? (proto as { constructor: unknown }).constructor
        : undefined;
      if (typeof ctor === 'function' && ctor.name === this.name) return true;
      if (ctor === Error) return false;
    }
    return false;
  }
}

// On the prototype, not on instances: it shows up neither in `Object.keys` nor in JSON or log output.
Object.defineProperty(LockError.prototype, LOCK_ERROR_BRAND, { value: true });
