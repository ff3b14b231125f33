import { afterEach, describe, expect, it } from '@jest/globals';
import { LockTestKit, keysUnder, sleep } from '../support/lock-test-kit.js';

describe('smoke', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('acquires, re-enters, releases', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const h = await engine.acquire('a');
    expect(h.fencingToken).toBeGreaterThan(0);
    const other = await engine.tryAcquire('a');
    expect(other).toBeNull();
    const info = await engine.inspect('a');
    expect(info?.mode).toBe('write');
    expect(await h.release()).toBe(true);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
    const results = await engine.withLock('b', async () =>
      engine.withLock('b', async (inner) => {
        expect(inner.reentrant).toBe(true);
        const i = await engine.inspect('b');
        expect(i?.holders[0].holdCount).toBe(2);
        return 7;
      }),
    );
    expect(results).toBe(7);
    const w = await engine.acquire('c');
    const t0 = Date.now();
    const p = engine.acquire('c', { waitTimeoutMs: 5000 });
    await sleep(50);
    await w.release();
    const h2 = await p;
    expect(Date.now() - t0).toBeLessThan(500);
    await h2.release();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });
});
