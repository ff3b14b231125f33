import { createLockDecorator } from './lock-decorator.factory.js';

/**
 * Runs the method under the exclusive (write) lock of `key`: a template such as `'article:<id>'` (`<name>` is the
 * parameter `name`, `<dto.author.id>` a property path, `<0>` the first argument), an array of templates (all keys,
 * all or nothing), or a function of the arguments. On a controller the lock lasts until the response completes;
 * on any other method, until its promise settles or its Observable completes.
 *
 * Templates naming an unknown parameter throw `LockConfigError` at start-up. At call time a missing, `null`, empty
 * or object value rejects with `LockKeyError` (HTTP 400 on a controller); a lock not granted within
 * `waitTimeoutMs` rejects with `LockAcquireTimeoutError` (HTTP 409). Without an initialised `RedisLockModule` the
 * method rejects and never runs unlocked.
 *
 * @example
 * @Put(':id')
 * @WriteLocked('article:<id>', { waitTimeoutMs: 2_000 })
 * update(@Param('id') id: string, @Body() dto: UpdateArticleDto) { … }
 */
export const WriteLocked = createLockDecorator('write');

/** Alias of `@WriteLocked`: an exclusive lock. */
export const Locked = WriteLocked;
