import { createLockDecorator } from './lock-decorator.factory.js';

/**
 * Runs the method under the exclusive (write) lock of `key`: a template such as `'article:<id>'`, an array of
 * templates, or a function of the arguments. On a controller the lock lasts until the response completes.
 */
export const WriteLocked = createLockDecorator('write');

/** Alias of `@WriteLocked`: an exclusive lock. */
export const Locked = WriteLocked;
