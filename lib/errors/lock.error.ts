/** Base class of every error this library throws; `instanceof LockError` catches them all. */
export class LockError extends Error {
  /** The lock key concerned, when there is one (for multi-key calls, the key that failed). */
  readonly key: string | undefined;

  constructor(message: string, options: { key?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.key = options.key;
  }
}
