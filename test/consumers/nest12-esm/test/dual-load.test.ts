import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { it } from 'node:test';
import * as esm from 'nest-redis-locks';
import { REDIS_URL } from '../src/redis.provider.js';

// An ESM app whose CommonJS dependency `require`s the package gets the CommonJS build next to the ESM one.
// The CommonJS build then requires Nest 12, which is ESM-only: Node 20.19+ can do that. The two copies have
// their own classes, yet share one lock world: errors of one are `instanceof` the other's classes.
const cjs = createRequire(import.meta.url)('nest-redis-locks') as typeof esm;

it('the CommonJS build loads in the same process and is a separate copy', () => {
  assert.equal(typeof cjs.LockEngine, 'function');
  assert.notEqual(cjs.LockEngine, esm.LockEngine, 'require and import should give the two different builds');
});

it('a lock held through the ESM copy blocks the CommonJS copy, whose error is instanceof the ESM classes', async () => {
  const options = { redis: REDIS_URL, keyPrefix: 'consumer-nest12-dual:' };
  const viaEsm = new esm.LockEngine(options);
  const viaCjs = new cjs.LockEngine(options);
  const key = `dual:${randomUUID()}`;
  try {
    const held = await viaEsm.acquire(key);
    const err = await viaCjs.acquire(key, { waitTimeoutMs: 50 }).catch((e: unknown) => e);
    await held.release();
    assert.ok(err instanceof cjs.LockAcquireTimeoutError, 'thrown by the CommonJS copy');
    assert.notEqual(Object.getPrototypeOf(err), esm.LockAcquireTimeoutError.prototype);
    assert.ok(err instanceof esm.LockAcquireTimeoutError, 'instanceof the ESM class');
    assert.ok(err instanceof esm.LockError, 'instanceof the ESM base class');
    assert.ok(!(err instanceof esm.LockKeyError), 'but not of an unrelated class');
  } finally {
    await Promise.all([viaEsm.close(), viaCjs.close()]);
  }
});
