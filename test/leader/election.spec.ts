import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Subscription } from 'rxjs';
import { LockClosedError } from '../../lib/errors/lock-closed.error.js';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import type { LeaderInfo, Leadership } from '../../lib/leader/leader.types.js';
import { LockTestKit, sleep, until } from '../support/lock-test-kit.js';

/** Resolves once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

describe('leader election (engines in one process)', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('one leader at a time among 3 engines, terms strictly increasing, each term handed over', async () => {
    const first = kit.engine();
    const engines = [first, kit.peer(first), kit.peer(first)];
    // The leaderships whose function runs: a term's function that outlives its term (its lease lost on a starved
    // machine: its signal aborted) may overlap the next one, so a term counts as leading while its signal is not aborted.
    const running = new Set<Leadership>();
    let most = 0;
    const leadersSeen: number[] = [];
    const terms: { engine: number; term: number }[] = [];
    const stops = engines.map((engine, i) =>
      engine.campaign(
        'relay',
        async (lead) => {
          running.add(lead);
          most = Math.max(most, [...running].filter((l) => !l.signal.aborted).length);
          terms.push({ engine: i, term: lead.term });
          leadersSeen.push(engines.filter((e) => e.isLeader('relay')).length);
          await sleep(150);
          running.delete(lead);
        },
        { leaseMs: 1_000, restartDelayMs: 50 },
      ),
    );
    await until(() => terms.length >= 8, 5_000, '8 terms');
    await Promise.all(stops.map((stop) => stop()));
    expect(most).toBe(1);
    expect(new Set(leadersSeen)).toEqual(new Set([1]));
    const numbers = terms.map((t) => t.term);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
    // A released term goes to a standby (it waits; the one that resigned pauses restartDelayMs first).
    expect(terms.slice(1).every((t, i) => t.engine !== terms[i].engine)).toBe(true);
  }, 15_000);

  it('leader(name) names this process and the term; isLeader and resign; nobody after stop', async () => {
    const a = kit.engine();
    const b = kit.peer(a);
    const leads: Leadership[] = [];
    const fn = async (lead: Leadership) => {
      leads.push(lead);
      await aborted(lead.signal);
    };
    const stopA = a.campaign('warmer', fn, { restartDelayMs: 100 });
    await until(() => leads.length === 1, 3_000, 'a leader');
    const stopB = b.campaign('warmer', fn, { restartDelayMs: 100 });
    const [leaderEngine, standby] = a.isLeader('warmer') ? [a, b] : [b, a];
    expect(standby.isLeader('warmer')).toBe(false);
    const info = await standby.leader('warmer');
    expect(info).toMatchObject({ pid: process.pid, term: leads[0].term, app: a.settings.appName });
    expect(info?.since).toBeInstanceOf(Date);

    const resignedAt = performance.now();
    expect(await leaderEngine.resign('warmer')).toBe(true);
    expect(leads[0].signal.aborted).toBe(true);
    expect(leaderEngine.isLeader('warmer')).toBe(false);
    await until(() => leads.length === 2, 2_000, 'the standby elected');
    const handOverMs = performance.now() - resignedAt;
    expect(standby.isLeader('warmer')).toBe(true);
    expect(leads[1].term).toBeGreaterThan(leads[0].term);
    expect(handOverMs).toBeLessThan(500);
    expect(await standby.resign('nothing-here')).toBe(false);

    await Promise.all([stopA(), stopB()]);
    expect(a.isLeader('warmer') || b.isLeader('warmer')).toBe(false);
    expect(await a.leader('warmer')).toBeNull();
  }, 15_000);

  it('a function that throws is logged, resigns, and campaigns again after restartDelayMs', async () => {
    const engine = kit.engine();
    const starts: { at: number; term: number }[] = [];
    const thrownAt: number[] = [];
    const stop = engine.campaign(
      'flaky',
      async (lead) => {
        starts.push({ at: performance.now(), term: lead.term });
        await sleep(20);
        thrownAt.push(performance.now());
        throw new Error('relay broke');
      },
      { restartDelayMs: 400 },
    );
    await until(() => starts.length >= 2, 3_000, 'a second term');
    await stop();
    expect(starts[1].at - thrownAt[0]).toBeGreaterThanOrEqual(390);
    expect(starts[1].at - thrownAt[0]).toBeLessThan(900);
    expect(starts[1].term).toBeGreaterThan(starts[0].term);
    expect(kit.logger.lines.some((l) => l.startsWith('error: leader "flaky"') && l.includes('relay broke'))).toBe(true);
  }, 10_000);

  it('watchLeader emits on subscribe and within a second of every change', async () => {
    const a = kit.engine();
    const b = kit.peer(a);
    const seen: { at: number; leader: LeaderInfo | null }[] = [];
    const subscription: Subscription = a.watchLeader('feed').subscribe((leader) => {
      seen.push({ at: performance.now(), leader });
    });
    kit.add(async () => subscription.unsubscribe());
    await until(() => seen.length === 1, 2_000, 'the first emission');
    expect(seen[0].leader).toBeNull();

    const elected: { at: number; term: number }[] = [];
    const fn = async (lead: Leadership) => {
      elected.push({ at: performance.now(), term: lead.term });
      await aborted(lead.signal);
    };
    const stopB = b.campaign('feed', fn, { restartDelayMs: 2_000 });
    await until(() => seen.length === 2, 2_000, 'the leader reported');
    expect(seen[1].leader?.term).toBe(elected[0].term);
    const stopA = a.campaign('feed', fn, { restartDelayMs: 2_000 });
    await b.resign('feed');
    await until(() => seen.length === 3, 2_000, 'the new leader reported');
    expect(seen[2].leader?.term).toBe(elected[1].term);
    const stoppedAt = performance.now();
    await Promise.all([stopA(), stopB()]);
    await until(() => seen.length === 4, 2_000, 'no leader reported');
    expect(seen[3].leader).toBeNull();

    const delays = [seen[1].at - elected[0].at, seen[2].at - elected[1].at, seen[3].at - stoppedAt];
    for (const delay of delays) expect(delay).toBeLessThan(1_000);
  }, 15_000);

  it('closing the engine ends the term (signal aborted, function awaited, lock released): a standby leads at once', async () => {
    const a = kit.engine();
    const b = kit.peer(a);
    const order: string[] = [];
    let reason: unknown;
    a.campaign('closing', async (lead) => {
      order.push('a elected');
      await aborted(lead.signal);
      reason = lead.signal.reason;
      await sleep(50);
      order.push('a done');
    });
    await until(() => a.isLeader('closing'), 3_000, 'a elected');
    let bElectedAt = 0;
    b.campaign('closing', async (lead) => {
      bElectedAt = performance.now();
      order.push('b elected');
      await aborted(lead.signal);
    });
    await sleep(100);
    const closedAt = performance.now();
    await a.close();
    // a's function ended before its lock was released (b may be elected before close resolves).
    expect(order.slice(0, 2)).toEqual(['a elected', 'a done']);
    expect(reason).toBeInstanceOf(LockClosedError);
    await until(() => bElectedAt > 0, 1_000, 'b elected');
    expect(bElectedAt - closedAt).toBeLessThan(1_000);
    expect(() => a.campaign('closing', () => undefined)).toThrow(LockClosedError);
  }, 10_000);

  it('options are checked when the campaign starts', () => {
    const engine = kit.engine();
    expect(() => engine.campaign('x', () => undefined, { leaseMs: 10 })).toThrow(LockConfigError);
    expect(() => engine.campaign('x', () => undefined, { restartDelayMs: -1 })).toThrow(/restartDelayMs/);
    expect(() => engine.campaign('', () => undefined)).toThrow(LockConfigError);
  });

  it('works on the memory store of the testing module', async () => {
    const { MemoryLockWorld } = await import('../../lib/testing/memory-lock-world.js');
    const world = new MemoryLockWorld();
    const a = kit.memoryEngine(world);
    const b = kit.memoryEngine(world, { keyPrefix: a.settings.keyPrefix });
    const terms: number[] = [];
    const fn = async (lead: Leadership) => {
      terms.push(lead.term);
      await sleep(50);
    };
    const stops = [a.campaign('m', fn, { restartDelayMs: 20 }), b.campaign('m', fn, { restartDelayMs: 20 })];
    await until(() => terms.length >= 4, 3_000, '4 terms');
    await Promise.all(stops.map((s) => s()));
    expect(new Set(terms).size).toBe(terms.length);
  }, 10_000);
});
