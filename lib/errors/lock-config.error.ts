import { LockError } from './lock.error.js';

/** An option is invalid, or the module is not set up. Names the option to fix. */
export class LockConfigError extends LockError {
  /** The option at fault, e.g. `leaseMs`. */
  readonly option: string | undefined;

  constructor(message: string, option?: string, key?: string) {
    super(message, { key });
    this.option = option;
  }
}
