import { afterEach, describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import { LockTestKit, keysUnder, redisNames, rejectionOf } from '../support/lock-test-kit.js';

describe('several keys at once', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('holds every key, with a fencing token each, and releases them together', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const lock = await engine.acquire(['b', 'a', 'c', 'a']);
    expect(lock.keys).toEqual(['a', 'b', 'c']);
    expect(lock.key).toBe('a');
    expect(Object.keys(lock.fencingTokens).sort()).toEqual(['a', 'b', 'c']);
    for (const key of ['a', 'b', 'c']) {
      expect((await engine.inspect(key))?.fencingToken).toBe(lock.fencingTokens[key]);
      expect(await other.tryAcquire(key)).toBeNull();
    }
    expect(await lock.release()).toBe(true);
    for (const key of ['a', 'b', 'c']) expect(await engine.inspect(key)).toBeNull();
  });

  it('takes all or nothing: if one key is taken, none is held afterwards', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const taken = await engine.acquire('b', { leaseMs: 5_000 });
    const onlyB = [
      redisNames(engine.settings.keyPrefix, 'b').state,
      redisNames(engine.settings.keyPrefix, 'b').leases,
    ].sort();

    expect(await other.tryAcquire(['a', 'b', 'c'])).toBeNull();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual(onlyB);

    const err = await rejectionOf(other.acquire(['c', 'b', 'a'], { waitTimeoutMs: 200 }));
    expect(err).toBeInstanceOf(LockAcquireTimeoutError);
    expect((err as LockAcquireTimeoutError).key).toBe('b');
    expect((err as LockAcquireTimeoutError).keys).toEqual(['a', 'b', 'c']);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual(onlyB);
    expect(await engine.inspect('a')).toBeNull();
    expect(await engine.inspect('c')).toBeNull();
    // Readers are refused by a write hold just the same.
    expect(await other.tryAcquire(['a', 'b'], { mode: 'read' })).toBeNull();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual(onlyB);

    await taken.release();
    const all = await other.acquire(['a', 'b', 'c'], { waitTimeoutMs: 0 });
    await all.release();
  });

  it('callers locking [a, b] and [b, a] concurrently, many times, never deadlock', async () => {
    const engine = kit.engine();
    const engines = [engine, kit.peer(engine)];
    let inside = 0;
    let overlaps = 0;
    const rounds = 40;
    const worker = async (keys: string[], n: number) => {
      for (let i = 0; i < rounds; i++) {
        await engines[n % 2].withLock(
          keys,
          async () => {
            if (++inside > 1) overlaps++;
            await new Promise<void>((r) => setImmediate(r));
            inside--;
          },
          { waitTimeoutMs: 5_000 },
        );
      }
    };
    await Promise.all([worker(['a', 'b'], 0), worker(['b', 'a'], 1), worker(['a', 'b'], 1), worker(['b', 'a'], 0)]);
    expect(overlaps).toBe(0);
    expect(await engine.inspect('a')).toBeNull();
    expect(await engine.inspect('b')).toBeNull();
  }, 20_000);
});
