import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { rejectionOf, sleep, track, until } from '../support/lock-test-kit.js';
import { LockWorlds, STORE_KINDS } from './lock-worlds.js';

describe.each(STORE_KINDS)("ifLocked: 'skip' and holdAtLeastMs (%s store)", (kind) => {
  const worlds = new LockWorlds(kind);
  afterEach(() => worlds.closeAll());

  it("ifLocked 'skip': a busy lock means the function is not run, the call resolves to undefined, and a skipped event says why", async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const skipped: unknown[] = [];
    b.on('skipped', (e) => skipped.push(e));
    const held = await a.acquire('k');
    let ran = false;
    const started = performance.now();
    const result = await b.withLock('k', () => (ran = true), { ifLocked: 'skip', waitTimeoutMs: 5_000 });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result).toBeUndefined();
    expect(ran).toBe(false);
    expect(skipped).toEqual([{ key: 'k', kind: 'lock', mode: 'write', owner: expect.any(String), reason: 'busy' }]);
    await held.release();
    expect(await b.withLock('k', () => 42, { ifLocked: 'skip' })).toBe(42);
    expect(await rejectionOf(b.withLock('k', () => 1, { ifLocked: 'later' as never }))).toBeInstanceOf(LockConfigError);
  });

  it('holdAtLeastMs: a release before then keeps the lock, finished, until then; no waiter gets in before; the first lease covers it', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const holdAtLeastMs = 1_200;
    const lock = await a.acquire('k', { holdAtLeastMs, leaseMs: 300, autoExtend: false });
    const grantedAt = performance.now();
    // The first lease is at least holdAtLeastMs, even with a shorter leaseMs and no renewal.
    expect((await a.inspect('k'))?.holders[0].remainingLeaseMs).toBeGreaterThan(holdAtLeastMs - 200);
    expect(await lock.release()).toBe(true);
    expect(lock.isHeld).toBe(false);
    const info = await a.inspect('k');
    expect(info?.holders).toEqual([expect.objectContaining({ finished: true, holdCount: 0 })]);
    expect(info!.holders[0].remainingLeaseMs).toBeLessThanOrEqual(holdAtLeastMs);
    // Nobody gets in before the hold ends, and then the waiter does.
    expect(await b.tryAcquire('k')).toBeNull();
    const waiter = track(b.acquire('k', { waitTimeoutMs: 5_000 }));
    await sleep(300);
    expect(waiter.settled).toBe(false);
    const next = await waiter.promise;
    expect(performance.now() - grantedAt).toBeGreaterThanOrEqual(holdAtLeastMs - 50);
    expect(performance.now() - grantedAt).toBeLessThan(holdAtLeastMs + 1_000);
    await next.release();
  });

  it('holdAtLeastMs: a run that outlasts it is released at once; closing the engine leaves a finished hold in place', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const long = await a.acquire('long', { holdAtLeastMs: 100 });
    await sleep(200);
    await long.release();
    expect(await a.inspect('long')).toBeNull();
    await a.withLock('short', () => undefined, { holdAtLeastMs: 1_500 });
    await a.close();
    expect((await b.inspect('short'))?.holders[0].finished).toBe(true);
    await until(async () => (await b.inspect('short')) === null, 3_000, 'the finished hold to end');
  });
});
