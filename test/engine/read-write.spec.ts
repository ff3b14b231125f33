import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { LockHandle } from '../../lib/types/lock.types.js';
import { LockTestKit, keysUnder, sleep, track, until } from '../support/lock-test-kit.js';
import type { AcquireCall } from '../../lib/store/lock-store.js';

describe('read/write exclusion', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('lets many readers in at once, and a writer only alone', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    // Separate top-level calls are separate owners; half of them on another engine (another "process").
    const readers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? other : engine).acquire('k', { mode: 'read', waitTimeoutMs: 0 })),
    );
    const info = await engine.inspect('k');
    expect(info?.mode).toBe('read');
    expect(info?.holders).toHaveLength(10);
    expect(new Set(readers.map((r) => r.token)).size).toBe(10);

    // A writer cannot join readers.
    expect(await engine.tryAcquire('k')).toBeNull();
    const writer = track(other.acquire('k', { waitTimeoutMs: 5_000 }));
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the writer to queue');
    for (const r of readers.slice(0, 9)) await r.release();
    await sleep(100);
    expect(writer.settled).toBe(false);
    await readers[9].release();
    const w = await writer.promise;
    expect(w.mode).toBe('write');

    // While the writer holds, nobody else gets in, in either mode.
    expect(await engine.tryAcquire('k', { mode: 'read' })).toBeNull();
    expect(await engine.tryAcquire('k', { mode: 'write' })).toBeNull();
    const writeInfo = await engine.inspect('k');
    expect(writeInfo?.mode).toBe('write');
    expect(writeInfo?.holders).toHaveLength(1);
    await w.release();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('readers that join and leave a shared lock: a dead reader stays out of the way, is purged by the next join, and its late release is not a release', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const store = kit.store(engine);
    const lock = store.lock('k');
    let seq = 0;
    const read = (token: string, leaseMs: number): AcquireCall => ({
      lock,
      mode: 'read',
      token,
      leaseMs,
      seq: ++seq,
      undoSeq: ++seq,
      ownerId: token,
      downgradeToken: '',
      waiterId: '',
      reentry: false,
      fair: false,
    });
    const names = lock as unknown as { state: string; leases: string };
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((ch) => ch.repeat(32));
    for (const token of [a, b]) expect((await store.acquire(read(token, 30_000))).granted).toBe(true);
    // c joins the full form with a short lease, d right after it; then c dies: nothing renews or releases it.
    const dead = await store.acquire(read(c, 500));
    expect(dead.granted).toBe(true);
    expect((await store.acquire(read(d, 30_000))).granted).toBe(true);
    await sleep(700);
    // The others leave on the shared path, which does not purge: c's record outlives them.
    for (const token of [d, a, b]) expect(await store.release(lock, token, ++seq)).toBe('ended');
    expect(await redis.hexists(names.state, `h:${c}`)).toBe(1);
    expect(await engine.inspect('k')).toBeNull();
    // A writer gets in at once, whatever the dead lease left, and its release leaves nothing behind.
    const writer = await engine.acquire('k', { waitTimeoutMs: 0 });
    expect(writer.fencingToken).toBeGreaterThan(dead.granted ? dead.fencingToken : Infinity);
    expect(await writer.release()).toBe(true);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);

    // A reader joining readers among whom one died purges it: dead readers do not pile up under read traffic.
    for (const [token, leaseMs] of [
      [a, 30_000],
      [c, 150],
      [b, 30_000],
    ] as const) {
      expect((await store.acquire(read(token, leaseMs))).granted).toBe(true);
    }
    await sleep(300);
    expect((await store.acquire(read(d, 30_000))).granted).toBe(true);
    expect(await redis.hexists(names.state, `h:${c}`)).toBe(0);
    expect((await redis.zrange(names.leases, '0', '-1')).sort()).toEqual([a, b, d].sort());

    // A reader whose lease ran out, released late among live readers: not a release of a hold.
    expect((await store.acquire(read(e, 150))).granted).toBe(true);
    await sleep(300);
    expect(await store.release(lock, e, ++seq)).toBe('not-held');
    expect((await engine.inspect('k'))?.holders).toHaveLength(3);
    for (const token of [a, b, d]) expect(await store.release(lock, token, ++seq)).toBe('ended');
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('writer preference: once a writer waits, a new reader queues behind it and gets in after it', async () => {
    const engine = kit.engine();
    const order: string[] = [];
    const r1 = await engine.acquire('k', { mode: 'read' });
    const writer = track(
      engine.acquire('k', { waitTimeoutMs: 5_000 }).then((h) => {
        order.push('writer');
        return h;
      }),
    );
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the writer to queue');

    // The lock is only read-held, yet a new reader may not join while a writer waits.
    expect(await engine.tryAcquire('k', { mode: 'read' })).toBeNull();
    const r2 = track(
      engine.acquire('k', { mode: 'read', waitTimeoutMs: 5_000 }).then((h) => {
        order.push('reader 2');
        return h;
      }),
    );
    await until(async () => (await engine.inspect('k'))?.waitingReaders === 1, 2_000, 'the reader to queue');
    await sleep(100);
    expect(r2.settled).toBe(false);
    expect((await engine.inspect('k'))?.holders).toHaveLength(1);

    await r1.release();
    const w = await writer.promise;
    await sleep(100);
    expect(r2.settled).toBe(false);
    await w.release();
    const reader2 = await r2.promise;
    expect(order).toEqual(['writer', 'reader 2']);
    await reader2.release();
  });

  it('20 readers share the key, a writer waits for all of them, and its release lets 20 blocked readers in at once', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const first = await Promise.all(
      Array.from({ length: 20 }, () => engine.acquire('k', { mode: 'read', waitTimeoutMs: 2_000 })),
    );
    const info = await engine.inspect('k');
    expect(info?.holders).toHaveLength(20);
    expect(info?.holders.every((h) => h.mode === 'read')).toBe(true);

    const writer = track(other.acquire('k', { waitTimeoutMs: 5_000 }));
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the writer to queue');
    for (const r of first.slice(0, 19)) await r.release();
    await sleep(50);
    expect(writer.settled).toBe(false);
    await first[19].release();
    const w = await writer.promise;

    // 20 readers from two engines block behind the writer.
    const acquiredAt: number[] = [];
    const blocked = Array.from({ length: 20 }, (_, i) =>
      (i % 2 ? other : engine).acquire('k', { mode: 'read', waitTimeoutMs: 5_000 }).then((h) => {
        acquiredAt.push(performance.now());
        return h;
      }),
    );
    await until(async () => (await engine.inspect('k'))?.waitingReaders === 20, 2_000, '20 readers to queue');
    await sleep(50);
    expect(acquiredAt).toHaveLength(0);
    const releasedAt = performance.now();
    await w.release();
    const second: LockHandle[] = await Promise.all(blocked);
    expect(Math.max(...acquiredAt) - releasedAt).toBeLessThan(200);
    const after = await engine.inspect('k');
    expect(after?.holders).toHaveLength(20);
    expect(after?.waiting).toBe(0);
    await Promise.all(second.map((r) => r.release()));
  });
});
