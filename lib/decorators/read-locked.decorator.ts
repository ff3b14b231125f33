import { createLockDecorator } from './lock-decorator.factory.js';

/**
 * Runs the method under the shared (read) lock of `key`: any number of readers, no writer; once a writer waits, new
 * readers queue behind it. Key templates, errors and lock duration as for `@WriteLocked`.
 *
 * @example
 * @Get(':id')
 * @ReadLocked('article:<id>')
 * find(@Param('id') id: string) { … }
 */
export const ReadLocked = createLockDecorator('read');
