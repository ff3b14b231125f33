import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockHandle } from '../../lib/types/lock.types.js';
import {
  LockTestKit,
  commandStats,
  keysUnder,
  scriptCalls,
  sleep,
  uniquePrefix,
  until,
} from '../support/lock-test-kit.js';

/** Waits until `inspect(key)` reports `n` waiters. */
function waitForWaiters(engine: LockEngine, key: string, n: number): Promise<void> {
  return until(async () => ((await engine.inspect(key))?.waiting ?? 0) >= n, 2_000, `${n} waiters on ${key}`);
}

describe('fair locks', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('serves 50 waiters in strict arrival order, waking only the next one', async () => {
    const server = await kit.server();
    const engine = kit.engine({ redis: server.url });
    const admin = kit.redis(server.url);
    const holder = await engine.acquire('k', { fair: true });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) {
      waiters.push(
        engine.acquire('k', { fair: true, waitTimeoutMs: 20_000 }).then(async (h) => {
          order.push(i);
          await sleep(1);
          await h.release();
        }),
      );
      // Arrival order is the order the first attempts reach Redis: let each one queue before the next.
      await waitForWaiters(engine, 'k', i + 1);
    }
    await admin.config('RESETSTAT');
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([...Array(50).keys()]);
    // One release wakes one waiter: 50 grants plus 50 releases, and no storm of failed retries.
    const evalsha = scriptCalls(await commandStats(admin));
    expect(evalsha).toBeGreaterThanOrEqual(100);
    expect(evalsha).toBeLessThanOrEqual(110);
    expect(await keysUnder(admin, engine.settings.keyPrefix)).toEqual([]);
  }, 30_000);

  it('lets the run of readers at the head enter together, and keeps a later reader behind a queued writer', async () => {
    const engine = kit.engine();
    const holder = await engine.acquire('rw', { fair: true });
    const events: string[] = [];
    const take = (name: string, mode: 'read' | 'write', holdMs: number) =>
      engine.acquire('rw', { fair: true, mode, waitTimeoutMs: 5_000 }).then(async (h) => {
        events.push(`+${name}`);
        await sleep(holdMs);
        events.push(`-${name}`);
        await h.release();
      });
    const all: Promise<void>[] = [];
    all.push(take('r1', 'read', 100));
    await waitForWaiters(engine, 'rw', 1);
    all.push(take('r2', 'read', 100));
    await waitForWaiters(engine, 'rw', 2);
    all.push(take('w', 'write', 50));
    await waitForWaiters(engine, 'rw', 3);
    all.push(take('r3', 'read', 10));
    await waitForWaiters(engine, 'rw', 4);
    await holder.release();
    await Promise.all(all);
    // r1 and r2 overlap; w comes after both left; r3 after w, although a reader could have shared with r1/r2.
    expect(events.slice(0, 2).sort()).toEqual(['+r1', '+r2']);
    expect(events.indexOf('+w')).toBeGreaterThan(Math.max(events.indexOf('-r1'), events.indexOf('-r2')));
    expect(events.indexOf('+r3')).toBeGreaterThan(events.indexOf('-w'));
  });

  it('tryAcquire and a timed-out or aborted fair waiter leave no queue entry behind', async () => {
    const engine = kit.engine();
    const admin = kit.redis();
    const holder = await engine.acquire('t', { fair: true });
    expect(await engine.tryAcquire('t', { fair: true })).toBeNull();
    await expect(engine.acquire('t', { fair: true, waitTimeoutMs: 100 })).rejects.toThrow('could not acquire');
    const ac = new AbortController();
    const aborted = engine.acquire('t', { fair: true, waitTimeoutMs: 5_000, signal: ac.signal });
    await waitForWaiters(engine, 't', 1);
    ac.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    const keys = await keysUnder(admin, engine.settings.keyPrefix);
    expect(keys.filter((k) => k.endsWith(':fq') || k.endsWith(':fd'))).toEqual([]);
    expect((await engine.inspect('t'))?.waiting).toBe(0);
    await holder.release();
    expect(await keysUnder(admin, engine.settings.keyPrefix)).toEqual([]);
  });

  it('skips a queued waiter whose process went away, once its registration runs out', async () => {
    const prefix = uniquePrefix('fair-dead');
    const engine = kit.engine({ keyPrefix: prefix, leaseMs: 400 });
    const holder = await engine.acquire('d', { fair: true });
    // A waiter in another "process": its connection is cut while it is queued, so it never withdraws.
    const doomedClient = new Redis(process.env.REDIS_URL!);
    const doomed = new LockEngine({
      redis: doomedClient,
      keyPrefix: prefix,
      leaseMs: 400,
      logger: { warn: () => undefined, error: () => undefined },
    });
    const doomedWait = doomed.acquire('d', { fair: true, waitTimeoutMs: 10_000 }).catch(() => 'gone');
    await waitForWaiters(engine, 'd', 1);
    doomedClient.disconnect();
    const next: Promise<LockHandle> = engine.acquire('d', { fair: true, waitTimeoutMs: 5_000 });
    await waitForWaiters(engine, 'd', 2);
    const released = Date.now();
    await holder.release();
    const h = await next;
    // Within the dead waiter's registration (its wait hint plus one lease), not the 5 s timeout.
    expect(Date.now() - released).toBeLessThan(2_000);
    await h.release();
    await doomed.close().catch(() => undefined);
    await doomedWait;
  });
});
