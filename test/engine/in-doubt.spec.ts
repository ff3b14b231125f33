import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import type { Leadership } from '../../lib/leader/leader.types.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import type { LockEvents } from '../../lib/locking/events/lock-events.js';
import type { HoldState } from '../../lib/types/lock.types.js';
import { RedisProcess } from '../support/faults.js';
import { LockTestKit, sleep, until } from '../support/lock-test-kit.js';
import { RedisProxy } from '../support/redis-proxy.js';

/*
 * In doubt (docs/failure-modes.md): a real redis-server paused with SIGSTOP (the connection stays open, nothing is
 * answered: only the liveness check can notice) and a connection cut by a TCP proxy (the client sees it close).
 * Margins are generous: 2 shared cores.
 */

/** Slack on every time bound: scheduling on a busy machine. */
const SLACK_MS = 400;

type Seen = { event: 'in-doubt' | 'reconnected' | 'lost'; key: string; kind: string; at: number; payload: unknown };

/** Every in-doubt, reconnected and lost event of `engine`, with when it came (performance.now()). */
function record(engine: LockEngine): Seen[] {
  const seen: Seen[] = [];
  const add =
    (event: Seen['event']) =>
    (e: LockEvents['in-doubt'] | LockEvents['reconnected'] | LockEvents['lost']): void => {
      seen.push({ event, key: e.key, kind: e.kind, at: performance.now(), payload: e });
    };
  engine.on('in-doubt', add('in-doubt'));
  engine.on('reconnected', add('reconnected'));
  engine.on('lost', add('lost'));
  return seen;
}

/** The states a handle went through, from `onStateChange`. */
function states(handle: { onStateChange(listener: (state: HoldState) => void): () => void }): HoldState[] {
  const seen: HoldState[] = [];
  handle.onStateChange((state) => seen.push(state));
  return seen;
}

describe('in doubt: Redis paused (SIGSTOP)', () => {
  const kit = new LockTestKit();
  let server: RedisProcess;

  beforeAll(async () => {
    server = await RedisProcess.start();
  });
  afterEach(async () => {
    if (server.paused) server.resume();
    await kit.closeAll();
  });
  afterAll(async () => {
    await server.dispose();
  });

  const engine = (options: Partial<LockEngineOptions> = {}): LockEngine =>
    kit.engine({ redis: server.url, ...options });

  it('paused for less than the lease: locks and permits in doubt within a second, then held again, nothing lost', async () => {
    const a = engine({ leaseMs: 3_000 });
    const seen = record(a);
    const lock = await a.acquire('report');
    const permit = await a.acquirePermit('exports', { limit: 2 });
    const lockStates = states(lock);
    const permitStates = states(permit);
    const before = await a.inspect('report');
    expect(lock.state).toBe('held');
    expect(permit.state).toBe('held');

    const pausedAt = performance.now();
    server.pause();
    await until(() => lock.state === 'in-doubt' && permit.state === 'in-doubt', 1_000 + SLACK_MS, 'in doubt');
    const doubtMs = performance.now() - pausedAt;
    console.log(`in doubt ${Math.round(doubtMs)} ms after SIGSTOP (livenessCheckMs 400)`);
    const doubts = seen.filter((s) => s.event === 'in-doubt');
    expect(doubts.map((s) => [s.key, s.kind]).sort()).toEqual([
      ['exports', 'semaphore'],
      ['report', 'lock'],
    ]);
    for (const d of doubts) {
      expect(d.at - pausedAt).toBeLessThan(1_000 + SLACK_MS);
      expect(d.payload).toMatchObject({ reason: 'no-answer' });
      expect((d.payload as { leftMs: number }).leftMs).toBeGreaterThan(0);
    }
    // In doubt is not lost: still held as far as anyone can tell.
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);

    await sleep(Math.max(0, 1_500 - (performance.now() - pausedAt)));
    const resumedAt = performance.now();
    server.resume();
    await until(() => lock.state === 'held' && permit.state === 'held', 2_000, 'held again');
    console.log(`held again ${Math.round(performance.now() - resumedAt)} ms after SIGCONT`);
    expect(
      seen
        .filter((s) => s.event === 'reconnected')
        .map((s) => s.key)
        .sort(),
    ).toEqual(['exports', 'report']);
    expect(seen.some((s) => s.event === 'lost')).toBe(false);
    expect(lockStates).toEqual(['in-doubt', 'held']);
    expect(permitStates).toEqual(['in-doubt', 'held']);
    expect(lock.signal.aborted).toBe(false);
    expect(permit.signal.aborted).toBe(false);
    // The same hold in Redis: same owner, same fencing token, lease renewed.
    const after = await a.inspect('report');
    expect(after?.holders.map((h) => [h.owner, h.fencingToken])).toEqual(
      before?.holders.map((h) => [h.owner, h.fencingToken]),
    );
    expect(after?.holders[0].remainingLeaseMs).toBeGreaterThan(1_500);
    // And it keeps being renewed past its first lease.
    await sleep(3_500);
    expect(lock.state).toBe('held');
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
    expect(await permit.release()).toBe(true);
    expect(lock.state).toBe('released');
  }, 20_000);

  it('paused for longer than the lease: in doubt, then lost, and never held again (also after SIGCONT)', async () => {
    const a = engine({ leaseMs: 1_500 });
    const seen = record(a);
    const lock = await a.acquire('import');
    const lockStates = states(lock);
    const pausedAt = performance.now();
    server.pause();
    await until(() => lock.state === 'in-doubt', 1_000 + SLACK_MS, 'in doubt');
    console.log(`in doubt ${Math.round(performance.now() - pausedAt)} ms after SIGSTOP (livenessCheckMs 400)`);
    expect(lock.signal.aborted).toBe(false);
    await until(() => lock.state === 'lost', 1_500 + SLACK_MS, 'lost');
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.isHeld).toBe(false);
    await sleep(Math.max(0, 3_000 - (performance.now() - pausedAt)));
    server.resume();
    // Redis answers again: the hold stays lost (freed in Redis, not renewed back).
    await sleep(1_500);
    expect(lock.state).toBe('lost');
    expect(lockStates).toEqual(['in-doubt', 'lost']);
    expect(seen.map((s) => s.event)).toEqual(['in-doubt', 'lost']);
    expect(await a.inspect('import')).toBeNull();
    expect(await lock.release()).toBe(false);
  }, 20_000);

  it('a leader is told it is in doubt before its term may have ended, and leads on when Redis is back in time', async () => {
    const a = engine();
    const told: { state: HoldState; at: number; leadState: HoldState }[] = [];
    let lead: Leadership | undefined;
    const stop = a.campaign(
      'relay',
      async (l) => {
        lead = l;
        l.onStateChange((state) => told.push({ state, at: performance.now(), leadState: l.state }));
        await new Promise((resolve) => l.signal.addEventListener('abort', resolve, { once: true }));
      },
      { leaseMs: 3_000 },
    );
    kit.add(stop);
    await until(() => lead !== undefined, 3_000, 'elected');
    const term = lead!.term;
    expect(lead!.state).toBe('held');
    const pausedAt = performance.now();
    server.pause();
    await until(() => told.length > 0, 1_000 + SLACK_MS, 'the leader told');
    console.log(`leader told in doubt ${Math.round(told[0].at - pausedAt)} ms after SIGSTOP`);
    expect(told[0]).toMatchObject({ state: 'in-doubt', leadState: 'in-doubt' });
    expect(lead!.signal.aborted).toBe(false);
    expect(a.isLeader('relay')).toBe(true);
    await sleep(Math.max(0, 1_500 - (performance.now() - pausedAt)));
    server.resume();
    await until(() => lead!.state === 'held', 2_000, 'leading again');
    expect(told.map((t) => t.state)).toEqual(['in-doubt', 'held']);
    expect(lead!.signal.aborted).toBe(false);
    expect((await a.leader('relay'))?.term).toBe(term);
    await stop();
    expect(lead!.state).toBe('released');
  }, 20_000);

  it('a leader paused out of its lease is told in doubt first, then its signal aborts', async () => {
    const a = engine();
    const told: { state: HoldState; aborted: boolean }[] = [];
    let lead: Leadership | undefined;
    const stop = a.campaign(
      'warmer',
      async (l) => {
        lead = l;
        l.onStateChange((state) => told.push({ state, aborted: l.signal.aborted }));
        await new Promise((resolve) => l.signal.addEventListener('abort', resolve, { once: true }));
      },
      { leaseMs: 1_500, restartDelayMs: 10_000 },
    );
    kit.add(stop);
    await until(() => lead !== undefined, 3_000, 'elected');
    server.pause();
    await until(() => lead!.signal.aborted, 1_500 + 1_000 + SLACK_MS, 'term ended');
    expect(told).toEqual([
      { state: 'in-doubt', aborted: false },
      { state: 'lost', aborted: true },
    ]);
    expect(lead!.state).toBe('lost');
    server.resume();
  }, 20_000);

  it('nothing held: no liveness check is sent', async () => {
    const a = engine({ livenessCheckMs: 50 });
    const lock = await a.acquire('brief');
    await lock.release();
    const admin = new Redis(server.url);
    try {
      const count = async () => Number(/cmdstat_ping:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
      const start = await count();
      await sleep(600);
      // The admin client's own INFO calls are not PINGs; nothing else pinged.
      expect((await count()) - start).toBe(0);
      const held = await a.acquire('long');
      await sleep(600);
      // While held: about one PING per connection (command and wake-up) every 50 ms.
      const during = (await count()) - start;
      expect(during).toBeGreaterThanOrEqual(6);
      await held.release();
    } finally {
      admin.disconnect();
    }
  });
});

describe('in doubt: connection cut by a TCP proxy', () => {
  const kit = new LockTestKit();
  let server: RedisProcess;
  let proxy: RedisProxy;

  beforeAll(async () => {
    server = await RedisProcess.start();
  });
  afterEach(async () => {
    proxy.heal();
    await kit.closeAll();
    await proxy.close();
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('in doubt at once when the connection closes (no liveness check needed), held again once it reconnects', async () => {
    proxy = await RedisProxy.start(server.url);
    // The check is off: only the connection's own report can put the hold in doubt.
    const a = kit.engine({ redis: proxy.url, leaseMs: 3_000, livenessCheckMs: 0 });
    const seen = record(a);
    const lock = await a.acquire('ledger');
    const lockStates = states(lock);
    const cutAt = performance.now();
    proxy.cut({ refuse: true });
    await until(() => lock.state === 'in-doubt', 1_000, 'in doubt');
    const doubt = seen.find((s) => s.event === 'in-doubt');
    console.log(`in doubt ${Math.round((doubt?.at ?? 0) - cutAt)} ms after the proxy cut the connection`);
    expect(doubt?.payload).toMatchObject({ key: 'ledger', kind: 'lock', reason: 'connection-lost' });
    expect((doubt?.at ?? Infinity) - cutAt).toBeLessThan(200);
    expect(lock.signal.aborted).toBe(false);
    await sleep(500);
    proxy.heal();
    await until(() => lock.state === 'held', 3_000, 'held again');
    expect(lockStates).toEqual(['in-doubt', 'held']);
    expect(seen.map((s) => s.event)).toEqual(['in-doubt', 'reconnected']);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  }, 15_000);
});

describe('in doubt: quorum mode (3 independent masters)', () => {
  const kit = new LockTestKit();
  let masters: RedisProcess[];

  beforeAll(async () => {
    masters = await Promise.all([RedisProcess.start(), RedisProcess.start(), RedisProcess.start()]);
  });
  afterEach(async () => {
    for (const m of masters) if (m.paused) m.resume();
    await kit.closeAll();
  });
  afterAll(async () => {
    await Promise.all(masters.map((m) => m.dispose()));
  });

  it('one master paused puts nothing in doubt (a majority keeps the hold); a second one does, and back when it resumes', async () => {
    const a = kit.engine({ redis: masters.map((m) => m.url), leaseMs: 3_000 });
    const seen = record(a);
    const lock = await a.acquire('quorum-report');
    const lockStates = states(lock);
    masters[0].pause();
    await sleep(1_500);
    expect(lock.state).toBe('held');
    expect(seen).toEqual([]);
    const pausedAt = performance.now();
    masters[1].pause();
    await until(() => lock.state === 'in-doubt', 1_000 + SLACK_MS, 'in doubt');
    console.log(`quorum: in doubt ${Math.round(performance.now() - pausedAt)} ms after a second master's SIGSTOP`);
    masters[1].resume();
    await until(() => lock.state === 'held', 2_000, 'held again');
    expect(lockStates).toEqual(['in-doubt', 'held']);
    expect(seen.map((s) => s.event)).toEqual(['in-doubt', 'reconnected']);
    expect(lock.signal.aborted).toBe(false);
    masters[0].resume();
    expect(await lock.release()).toBe(true);
  }, 20_000);
});
