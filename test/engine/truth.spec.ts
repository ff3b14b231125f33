import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockClosedError } from '../../lib/errors/lock-closed.error.js';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import type { HoldState } from '../../lib/types/lock.types.js';
import { sleep, until } from '../support/async.js';
import { RedisProcess } from '../support/faults.js';
import { LockTestKit } from '../support/lock-test-kit.js';

/**
 * The library's word is the truth: no handle reads "held" at a moment after Redis granted the same lock to another
 * holder. Each case is checked at the moment the other holder is granted (its acquisition resolving), which is when a
 * false "held" would do harm. (The history-checked fault suite, test/history, checks the same over many processes and
 * faults at once.)
 */
describe('the library tells a holder the truth', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('close() mid-hold ends every handle (lock, read lock, permit) before another instance is granted it', async () => {
    const a = kit.engine();
    const b = kit.peer(a);
    const lock = await a.acquire('k');
    const read = await a.acquire('r', { mode: 'read' });
    const permit = await a.acquirePermit('s', { limit: 1 });
    // A background loop that keeps looking, as a long job does.
    const signals = [lock.signal, read.signal, permit.signal];
    const granted = [
      b.acquire('k', { waitTimeoutMs: 5_000 }),
      b.acquire('r', { waitTimeoutMs: 5_000 }),
      b.acquirePermit('s', { limit: 1, waitTimeoutMs: 5_000 }),
    ].map((p) =>
      p.then((handle) => {
        // The moment B holds it: A's handles must no longer claim it.
        const seen = {
          isHeld: [lock.isHeld, read.isHeld, permit.isHeld],
          states: [lock.state, read.state, permit.state],
        };
        return { handle, seen };
      }),
    );
    await sleep(50);
    await a.close();
    for (const { handle, seen } of await Promise.all(granted)) {
      expect(seen.isHeld).toEqual([false, false, false]);
      expect(seen.states.every((s: HoldState) => s !== 'held' && s !== 'in-doubt')).toBe(true);
      await handle.release();
    }
    for (const signal of signals) {
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(LockClosedError);
      expect((signal.reason as Error).message).toMatch(
        /holding "."\): the application is shutting down; the lock was released/,
      );
    }
    expect([lock.state, read.state, permit.state]).toEqual(['released', 'released', 'released']);
    expect(await lock.release()).toBe(false);
  });

  it('a release by token ends the local handle at once (isHeld false, signal aborted)', async () => {
    const a = kit.engine();
    const lock = await a.acquire('k');
    const released = a.release('k', lock.token);
    expect(lock.isHeld).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(await released).toBe(true);
    expect(lock.state).toBe('released');
  });

  it('a hold without autoExtend in doubt after Redis restarted without its data is lost, never "held" again', async () => {
    const server = await kit.server(['--save', '', '--appendonly', 'no']);
    const a = kit.engine({ redis: server.url, livenessCheckMs: 100 });
    const b = kit.engine({ redis: server.url, keyPrefix: a.settings.keyPrefix });
    const lock = await a.acquire('k', { leaseMs: 8_000, autoExtend: false });
    const states: HoldState[] = [];
    lock.onStateChange((s) => states.push(s));
    await server.restart();
    // Redis is back (the liveness check is answered), without the hold.
    await until(() => lock.state !== 'held' && lock.state !== 'in-doubt', 5_000, 'the hold to be settled');
    expect(lock.state).toBe('lost');
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(states).not.toContain('held');
    const other = await b.acquire('k', { waitTimeoutMs: 2_000 });
    expect(lock.isHeld).toBe(false);
    await other.release();
  }, 20_000);

  it('a hold without autoExtend in doubt whose Redis kept it is held again once its token is confirmed', async () => {
    // SIGSTOP (the connection stays open) on a server of its own, stopped after the kit's checks of what is left.
    const server = await RedisProcess.start();
    try {
      const a = kit.engine({ redis: server.url, livenessCheckMs: 100 });
      const lock = await a.acquire('k', { leaseMs: 8_000, autoExtend: false });
      const states: HoldState[] = [];
      lock.onStateChange((s) => states.push(s));
      server.pause();
      await until(() => lock.state === 'in-doubt', 3_000, 'in doubt');
      server.resume();
      await until(() => lock.state === 'held', 3_000, 'held again');
      expect(states).toEqual(['in-doubt', 'held']);
      await lock.release();
      await kit.closeAll();
    } finally {
      if (server.paused) server.resume();
      await server.dispose();
    }
  }, 15_000);

  it('a holder counts its lease less the drift allowance: not held past leaseMs − (leaseMs × 1 % + 2 ms)', async () => {
    const a = kit.engine();
    await (await a.acquire('warm-up')).release();
    const t0 = performance.now();
    const lock = await a.acquire('k', { leaseMs: 2_000, autoExtend: false });
    // The allowance is 22 ms; Redis, whose clock may run up to 1 % fast, can end the lease by then.
    await sleep(Math.max(0, t0 + 1_990 - performance.now()));
    while (performance.now() < t0 + 1_990) await sleep(1);
    expect(lock.isHeld).toBe(false);
    expect(lock.signal.aborted).toBe(true);
  });
});
