import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockKeyError } from '../../lib/errors/lock-key.error.js';
import { LockError } from '../../lib/errors/lock.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { AcquireOptions } from '../../lib/types/lock.types.js';
import { LockTestKit, commandStats, keysUnder, withoutHarness } from '../support/lock-test-kit.js';

/** What the call threw or rejected with; fails if it succeeded. Promise-returning calls must reject, not throw. */
async function failureOf(call: () => Promise<unknown>): Promise<unknown> {
  let promise: Promise<unknown>;
  try {
    promise = call();
  } catch (err) {
    throw new Error(`threw synchronously instead of returning a rejected promise: ${String(err)}`, { cause: err });
  }
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure, but the call succeeded');
}

/** Calls of commands that change or read lock data (everything a script or a client would send for a lock). */
const badKeys: [string, unknown][] = [
  ['an empty string', ''],
  ['a number', 42],
  ['null', null],
  ['undefined', undefined],
  ['an object', { id: 1 }],
  ['1025 ASCII bytes', 'x'.repeat(1025)],
  ['1026 UTF-8 bytes in 513 characters', 'é'.repeat(513)],
  ["a key starting with '}'", '}abc'],
  // Lone surrogates have no UTF-8 form: each would be written as U+FFFD, so all would share one lock.
  ['a lone high surrogate', '\uD800'],
  ['another lone high surrogate', '\uD801'],
  ['a lone low surrogate inside a key', 'a\uDC00b'],
  ['a high surrogate at the end', 'article:\uD83D'],
];

describe('validation before Redis is touched', () => {
  const kit = new LockTestKit();
  let engine: LockEngine;
  let redis: Redis;
  let url: string;

  beforeAll(async () => {
    // A private server: DBSIZE and command counts belong to this file alone.
    const server = await kit.server();
    url = server.url;
    engine = kit.engine({ redis: url });
    redis = kit.redis(url);
    await engine.ping();
  });
  afterAll(() => kit.closeAll());

  async function expectRedisUntouched(run: () => Promise<void>): Promise<void> {
    const sizeBefore = await redis.dbsize();
    const keysBefore = await keysUnder(redis, engine.settings.keyPrefix, true);
    await redis.config('RESETSTAT');
    await run();
    expect(withoutHarness(await commandStats(redis))).toEqual({});
    expect(await redis.dbsize()).toBe(sizeBefore);
    expect(await keysUnder(redis, engine.settings.keyPrefix, true)).toEqual(keysBefore);
  }

  describe.each(badKeys)('a key that is %s', (_label, key) => {
    it('is rejected with LockKeyError by every entry point, and Redis is unchanged', async () => {
      let ran = false;
      const k = key as string;
      await expectRedisUntouched(async () => {
        const calls: (() => Promise<unknown>)[] = [
          () => engine.acquire(k),
          () => engine.acquire(k, { mode: 'read' }),
          () => engine.tryAcquire(k),
          () => engine.acquire(['ok', k]),
          () => engine.withLock(k, () => (ran = true)),
          () => engine.release(k, 'a'.repeat(32)),
          () => engine.forceRelease(k),
          () => engine.inspect(k),
        ];
        for (const call of calls) {
          const err = await failureOf(call);
          expect(err).toBeInstanceOf(LockKeyError);
          expect(err).toBeInstanceOf(LockError);
          expect((err as LockKeyError).value).toBe(key);
        }
      });
      expect(ran).toBe(false);
    });
  });

  it('an empty key array and an empty token are rejected with LockKeyError too', async () => {
    await expectRedisUntouched(async () => {
      expect(await failureOf(() => engine.acquire([]))).toBeInstanceOf(LockKeyError);
      expect(await failureOf(() => engine.tryAcquire([]))).toBeInstanceOf(LockKeyError);
      expect(await failureOf(() => engine.release('k', ''))).toBeInstanceOf(LockKeyError);
    });
  });

  it('accepts keys up to 1024 bytes, and braces inside a key', async () => {
    // Surrogate pairs (emoji) are well-formed: each is its own key.
    const keys = ['x'.repeat(1024), 'é'.repeat(512), 'a}b', '{x}', 'x{', '\u{1F600}', 'article:\u{1F601}'];
    const before = await redis.dbsize();
    for (const key of keys) {
      const lock = await engine.acquire(key, { waitTimeoutMs: 0 });
      expect((await engine.inspect(key))?.holders).toHaveLength(1);
      expect(await lock.release()).toBe(true);
    }
    // Nothing left but each key's fence tombstone (its last fencing token, expiring by itself).
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
    expect(await redis.dbsize()).toBe(before + keys.length);
  });

  const badOptions: [string, AcquireOptions, string][] = [
    ['leaseMs 0', { leaseMs: 0 }, 'leaseMs'],
    ['leaseMs below the minimum', { leaseMs: 29 }, 'leaseMs'],
    ['a fractional leaseMs', { leaseMs: 1.5 }, 'leaseMs'],
    ['leaseMs NaN', { leaseMs: Number.NaN }, 'leaseMs'],
    ['a negative waitTimeoutMs', { waitTimeoutMs: -1 }, 'waitTimeoutMs'],
    ["mode 'x'", { mode: 'x' as never }, 'mode'],
    ["autoExtend 'yes'", { autoExtend: 'yes' as never }, 'autoExtend'],
    ['a signal that is not an AbortSignal', { signal: {} as never }, 'signal'],
  ];

  it.each(badOptions)(
    '%s is rejected with LockConfigError naming the option and key, and Redis is unchanged',
    async (_label, options, option) => {
      await expectRedisUntouched(async () => {
        for (const call of [
          () => engine.acquire('k', options),
          () => engine.tryAcquire('k', options),
          () => engine.withLock('k', () => 1, options),
        ]) {
          const err = await failureOf(call);
          expect(err).toBeInstanceOf(LockConfigError);
          expect(err).toMatchObject({ option, key: 'k' });
          expect((err as Error).message).toContain(option);
        }
      });
    },
  );

  it.each([
    ["a keyPrefix with '{'", { keyPrefix: 'app{' }, 'keyPrefix'],
    ["a keyPrefix with '}'", { keyPrefix: 'app}' }, 'keyPrefix'],
    ['an engine leaseMs of 0', { leaseMs: 0 }, 'leaseMs'],
    ['a negative engine waitTimeoutMs', { waitTimeoutMs: -5 }, 'waitTimeoutMs'],
  ])('an engine with %s is refused with LockConfigError', async (_label, options, option) => {
    await expectRedisUntouched(async () => {
      let err: unknown;
      try {
        kit.engine({ redis: url, ...options });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(LockConfigError);
      expect((err as LockConfigError).option).toBe(option);
    });
  });
});
