import { createLockDecorator } from './lock-decorator.factory.js';

/**
 * Runs the method under the shared (read) lock of `key`: any number of readers, no writer. Key as for
 * `@WriteLocked`.
 */
export const ReadLocked = createLockDecorator('read');
