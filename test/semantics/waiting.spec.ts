import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockMode } from '../../lib/types/lock.types.js';
import { rejectionOf, sleep, track, until } from '../support/lock-test-kit.js';
import { LockWorlds, STORE_KINDS } from './lock-worlds.js';

function waiting(engine: LockEngine, key: string, n: number): Promise<void> {
  return until(async () => ((await engine.inspect(key))?.waiting ?? 0) === n, 2_000, `${n} waiter(s) on "${key}"`);
}

describe.each(STORE_KINDS)('waiting (%s store)', (kind) => {
  const worlds = new LockWorlds(kind);
  afterEach(() => worlds.closeAll());

  it('waitTimeoutMs: rejects with LockAcquireTimeoutError and its fields, and leaves no waiter behind', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const held = await a.acquire('k');
    const started = performance.now();
    const err = await rejectionOf(b.acquire('k', { mode: 'read', waitTimeoutMs: 150 }));
    const elapsed = performance.now() - started;
    expect(err).toBeInstanceOf(LockAcquireTimeoutError);
    const timeout = err as LockAcquireTimeoutError;
    expect(timeout).toMatchObject({ key: 'k', keys: ['k'], mode: 'read', waitTimeoutMs: 150 });
    expect(timeout.waitedMs).toBeGreaterThanOrEqual(145);
    expect(elapsed).toBeLessThan(1_000);
    expect((await a.inspect('k'))?.waiting).toBe(0);
    await held.release();
  });

  it('an AbortSignal cancels waiting at once, with its reason, and withdraws the waiter', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const held = await a.acquire('k');
    const controller = new AbortController();
    const waiter = track(b.acquire('k', { waitTimeoutMs: 10_000, signal: controller.signal }));
    await waiting(a, 'k', 1);
    const abortedAt = performance.now();
    controller.abort(new Error('user went away'));
    expect(await rejectionOf(waiter.promise)).toMatchObject({ message: 'user went away' });
    expect(waiter.at! - abortedAt).toBeLessThan(1_000);
    expect((await a.inspect('k'))?.waiting).toBe(0);
    await held.release();
  });

  it.each([false, true])(
    'waiters that wait longer than their registration lease stay registered and are woken at once, fair ones in order (fair: %s)',
    async (fair) => {
      const a = worlds.engine();
      const b = worlds.engine();
      const held = await a.acquire('k', { leaseMs: 10_000 });
      const first = track(b.acquire('k', { fair, waitTimeoutMs: 5_000 }));
      await waiting(a, 'k', 1);
      const second = track(a.acquire('k', { fair, waitTimeoutMs: 5_000 }));
      await waiting(a, 'k', 2);
      // Several registration leases (600 ms) go by: the heartbeats keep both waiters registered.
      for (let i = 0; i < 4; i++) {
        await sleep(400);
        expect((await a.inspect('k'))?.waiting).toBe(2);
      }
      const releasedAt = performance.now();
      await held.release();
      // Non-fair waiters have no order: whichever is woken first.
      const next = fair ? first : await Promise.race([first, second].map((w) => w.promise.then(() => w)));
      const lock = await next.promise;
      expect(next.at! - releasedAt).toBeLessThan(500);
      const other = next === first ? second : first;
      expect(other.settled).toBe(false);
      await lock.release();
      await (await other.promise).release();
    },
  );

  it('a release wakes the waiting writer at once, and a write release wakes every waiting reader, long before any lease ends', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const leaseMs = 10_000;
    const held = await a.acquire('k', { leaseMs });
    const writer = track(b.acquire('k', { leaseMs, waitTimeoutMs: 3_000 }));
    await waiting(a, 'k', 1);
    await sleep(50);
    let releasedAt = performance.now();
    await held.release();
    const w = await writer.promise;
    expect(writer.at! - releasedAt).toBeLessThan(1_000);

    const readers = Array.from({ length: 6 }, (_, i) =>
      track((i % 2 ? a : b).acquire('k', { mode: 'read', waitTimeoutMs: 3_000 })),
    );
    await waiting(a, 'k', 6);
    await sleep(50);
    expect(readers.some((r) => r.settled)).toBe(false);
    releasedAt = performance.now();
    await w.release();
    const handles = await Promise.all(readers.map((r) => r.promise));
    expect(Math.max(...readers.map((r) => r.at!)) - releasedAt).toBeLessThan(1_000);
    expect((await a.inspect('k'))?.holders).toHaveLength(6);
    for (const h of handles) await h.release();
  });

  it('fair: writers are served in arrival order, whichever instance they wait on; one that gives up blocks nobody', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const holder = await a.acquire('k', { fair: true });
    const order: number[] = [];
    const all: Promise<void>[] = [];
    const quitter = new AbortController();
    for (let i = 0; i < 6; i++) {
      const signal = i === 2 ? quitter.signal : undefined;
      all.push(
        (i % 2 ? a : b).acquire('k', { fair: true, waitTimeoutMs: 5_000, signal }).then(
          async (h) => {
            order.push(i);
            await sleep(2);
            await h.release();
          },
          () => undefined,
        ),
      );
      await waiting(a, 'k', i + 1);
    }
    quitter.abort();
    await waiting(a, 'k', 5);
    const releasedAt = performance.now();
    await holder.release();
    await Promise.all(all);
    expect(order).toEqual([0, 1, 3, 4, 5]);
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
  });

  it('fair: a reader that came first goes before a writer that came later (no writer preference), readers at the head enter together', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const holder = await a.acquire('k', { fair: true });
    const events: string[] = [];
    const take = (engine: LockEngine, name: string, mode: LockMode, holdMs: number) =>
      engine.acquire('k', { fair: true, mode, waitTimeoutMs: 5_000 }).then(async (h) => {
        events.push(`+${name}`);
        await sleep(holdMs);
        events.push(`-${name}`);
        await h.release();
      });
    const all = [take(a, 'r1', 'read', 60)];
    await waiting(a, 'k', 1);
    all.push(take(b, 'r2', 'read', 60));
    await waiting(a, 'k', 2);
    all.push(take(b, 'w', 'write', 20));
    await waiting(a, 'k', 3);
    all.push(take(a, 'r3', 'read', 5));
    await waiting(a, 'k', 4);
    await holder.release();
    await Promise.all(all);
    // r1 and r2 overlap; w comes after both left; r3 after w, although it could have shared with r1 and r2.
    expect(events.slice(0, 2).sort()).toEqual(['+r1', '+r2']);
    expect(events.indexOf('+w')).toBeGreaterThan(Math.max(events.indexOf('-r1'), events.indexOf('-r2')));
    expect(events.indexOf('+r3')).toBeGreaterThan(events.indexOf('-w'));
  });
});
