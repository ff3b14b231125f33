import { afterEach, describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import { rejectionOf, sleep, track, until } from '../support/lock-test-kit.js';
import { LockWorlds, STORE_KINDS, SlowCounter } from './lock-worlds.js';

describe.each(STORE_KINDS)('exclusion (%s store)', (kind) => {
  const worlds = new LockWorlds(kind);
  afterEach(() => worlds.closeAll());

  it('30 concurrent read-modify-writes from two instances end at 30 under withLock, and lose updates without it', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const counter = new SlowCounter();
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? a : b).withLock('counter', () => counter.increment(), { waitTimeoutMs: 10_000 }),
      ),
    );
    expect(counter.value).toBe(30);

    counter.value = 0;
    await Promise.all(Array.from({ length: 30 }, () => counter.increment()));
    expect(counter.value).toBeLessThan(30);
  });

  it('lets many readers share the lock, and keeps writers out while they hold it', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const readers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).acquire('k', { mode: 'read', waitTimeoutMs: 0 })),
    );
    const info = await a.inspect('k');
    expect(info?.mode).toBe('read');
    expect(info?.holders).toHaveLength(10);
    expect(info?.holders.every((h) => h.mode === 'read' && h.holdCount === 1)).toBe(true);
    expect(await b.tryAcquire('k')).toBeNull();
    for (const r of readers) await r.release();
    expect(await a.inspect('k')).toBeNull();
  });

  it('a writer waits for every reader; once it waits, new readers queue behind it (writer preference)', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const order: string[] = [];
    const r1 = await a.acquire('k', { mode: 'read' });
    const writer = track(
      b.acquire('k', { waitTimeoutMs: 5_000 }).then((h) => {
        order.push('writer');
        return h;
      }),
    );
    await until(async () => (await a.inspect('k'))?.waitingWriters === 1, 2_000, 'the writer to wait');

    // Only readers hold the lock, yet a new reader may not join while a writer waits.
    expect(await a.tryAcquire('k', { mode: 'read' })).toBeNull();
    const r2 = track(
      a.acquire('k', { mode: 'read', waitTimeoutMs: 5_000 }).then((h) => {
        order.push('reader 2');
        return h;
      }),
    );
    await until(async () => (await a.inspect('k'))?.waitingReaders === 1, 2_000, 'the second reader to wait');
    await sleep(50);
    expect(writer.settled).toBe(false);
    expect(r2.settled).toBe(false);

    await r1.release();
    const w = await writer.promise;
    await sleep(50);
    expect(r2.settled).toBe(false);
    await w.release();
    await (await r2.promise).release();
    expect(order).toEqual(['writer', 'reader 2']);
  });

  it('tryAcquire returns null while another owner holds the lock, in either mode, and the lock once free', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const held = await a.acquire('k');
    expect(await b.tryAcquire('k')).toBeNull();
    expect(await b.tryAcquire('k', { mode: 'read' })).toBeNull();
    expect(await a.tryAcquire('k')).toBeNull(); // another top-level call is another owner
    await held.release();
    const next = await b.tryAcquire('k');
    expect(next?.mode).toBe('write');
    await next?.release();
  });

  it('several keys: all or nothing, and callers locking [a, b] and [b, a] never deadlock', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const taken = await a.acquire('b');
    expect(await b.tryAcquire(['a', 'b', 'c'])).toBeNull();
    const err = await rejectionOf(b.acquire(['c', 'b', 'a'], { waitTimeoutMs: 100 }));
    expect(err).toBeInstanceOf(LockAcquireTimeoutError);
    expect((err as LockAcquireTimeoutError).keys).toEqual(['a', 'b', 'c']);
    expect(await a.inspect('a')).toBeNull();
    expect(await a.inspect('c')).toBeNull();
    await taken.release();

    let inside = 0;
    let overlaps = 0;
    const worker = async (keys: string[], n: number) => {
      for (let i = 0; i < 15; i++) {
        await [a, b][n % 2].withLock(
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
  });
});
