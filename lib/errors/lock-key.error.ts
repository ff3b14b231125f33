import { LockError } from './lock.error.js';

/** A lock key is invalid (empty, too long, not a string) or a key template could not be resolved. Maps to HTTP 400. */
export class LockKeyError extends LockError {
  /** The offending value, as given (may be a non-string). */
  readonly value: unknown;

  constructor(message: string, value: unknown, key?: string) {
    super(message, { key });
    this.value = value;
  }
}
