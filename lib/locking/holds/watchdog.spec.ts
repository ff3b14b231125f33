import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { LockLostReason } from '../../errors/lock-lost.error.js';
import { Hold } from './hold.js';
import type { HoldOwner } from './hold.js';
import { leaseDeadline } from '../../store/drift.js';
import { Watchdog } from './watchdog.js';
import type { WatchdogTuning } from './watchdog.js';

/*
 * Real time. Jest's fake timers fake `globalThis.performance` but not `performance` from `node:perf_hooks`, which
 * the watchdog and `Hold` read, so a fake clock would disagree with the watchdog's. Each hold is created with a
 * chosen `sentAt`, so its renewal and expiry fall a few tens of milliseconds after the test starts; assertions
 * are about order and about invariants the watchdog guarantees exactly (never renewed after its lease ran out,
 * never declared lost before), with generous upper bounds only.
 */

const owner: HoldOwner = {
  id: 'owner-1',
  nextSeq: () => 1,
  oneAtATime: <T>(_lane: string, op: () => Promise<T>) => op(),
  occupy: (_lane: string, work: () => Promise<unknown>) => work(),
  forget: () => undefined,
  hold: () => undefined,
};

const now = (): number => performance.now();

/** A hold on `key` whose lease started at `sentAt` (performance.now time). */
function hold(key: string, leaseMs: number, sentAt: number, autoExtend = true): Hold {
  return new Hold(owner, `test|${key}`, { key }, 'write', `token-${key}`, 1, leaseMs, autoExtend, sentAt);
}

/** Waits for real time to pass. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets pending promise callbacks (the watchdog's renewal continuation) run. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Rejects if `promise` takes longer than `ms` of real time. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Records events and lets a test await the n-th one. */
class Recorder<T> {
  readonly items: T[] = [];
  private readonly waiters: (() => void)[] = [];

  push(item: T): void {
    this.items.push(item);
    for (const w of this.waiters.splice(0)) w();
  }

  async nth(n: number, ms = 3_000): Promise<T> {
    const arrived = async () => {
      while (this.items.length <= n) await new Promise<void>((resolve) => this.waiters.push(resolve));
      return this.items[n];
    };
    return within(arrived(), ms, `event #${n + 1}`);
  }
}

interface RenewCall {
  readonly holds: readonly Hold[];
  readonly at: number;
  resolve(results: boolean[]): void;
  reject(err: unknown): void;
}

interface LostCall {
  readonly hold: Hold;
  readonly reason: LockLostReason;
  readonly at: number;
}

/** A watchdog over a fake `renew` whose answers the test controls. */
function setup(answer?: (call: RenewCall) => void, tuning?: Partial<WatchdogTuning>) {
  const calls = new Recorder<RenewCall>();
  const lost = new Recorder<LostCall>();
  const renew = jest.fn(
    (holds: readonly Hold[]) =>
      new Promise<boolean[]>((resolve, reject) => {
        const call = { holds: [...holds], at: now(), resolve, reject };
        calls.push(call);
        answer?.(call);
      }),
  );
  const onLost = jest.fn((h: Hold, reason: LockLostReason) => lost.push({ hold: h, reason, at: now() }));
  const onError = jest.fn();
  const onBehind = jest.fn();
  const watchdog = new Watchdog(renew, { lost: onLost, renewalFailed: onError, behind: onBehind }, tuning);
  watchdogs.push(watchdog);
  return { watchdog, renew, onLost, onError, onBehind, calls, lost };
}

const watchdogs: Watchdog[] = [];
afterEach(() => {
  for (const w of watchdogs.splice(0)) w.stop();
});

/** Timers may fire a little early against performance.now (the event loop caches its clock). */
const EARLY = 20;

describe('Watchdog', () => {
  it('renews a hold a third of its lease after it was taken', async () => {
    const { watchdog, calls, onLost } = setup();
    const t0 = now();
    // Lease 6 s taken 1.85 s ago: the renewal is due in 150 ms (at 2 s), the lease runs out in 4.15 s.
    const h = hold('a', 6_000, t0 - 1_850);
    watchdog.add(h);
    const call = await calls.nth(0);
    expect(call.holds).toHaveLength(1);
    expect(call.holds[0]).toBe(h);
    expect(call.at).toBeGreaterThanOrEqual(t0 + 150 - EARLY);
    // At half the lease (leaseMs / 2) it would be 1 s later; generous against a slow machine.
    expect(call.at).toBeLessThan(t0 + 150 + 700);
    expect(onLost).not.toHaveBeenCalled();
  });

  it('counts the renewed lease from when the renewal was sent, not answered', async () => {
    const { watchdog, calls, onLost } = setup();
    const h = hold('a', 6_000, now() - 1_950);
    watchdog.add(h);
    const call = await calls.nth(0);
    await delay(60);
    call.resolve([true]);
    await settle();
    // The lease less the drift allowance (6 s × 1 % + 2 ms).
    expect(h.validUntil).toBeLessThanOrEqual(call.at + 6_000 - 62);
    expect(h.validUntil).toBeGreaterThan(call.at + 6_000 - 62 - EARLY);
    expect(h.validUntil - h.nextRenewAt).toBeCloseTo(4_000 - 62, 6);
    expect(watchdog.list()).toEqual([h]);
    expect(onLost).not.toHaveBeenCalled();
  });

  it('counts the deadline from the lease the renewal sent, not one a re-entry raised while it was in flight', async () => {
    const { watchdog, calls } = setup();
    const h = hold('a', 3_000, now() - 950);
    watchdog.add(h);
    const call = await calls.nth(0);
    // A re-entry asks for a 60 s lease while the renewal of the 3 s one is on its way: Redis was told 3 s.
    h.leaseMs = 60_000;
    call.resolve([true]);
    await settle();
    expect(h.validUntil).toBeLessThanOrEqual(call.at + 3_000 - 32);
    expect(h.nextRenewAt).toBeLessThanOrEqual(call.at + 1_000);
  });

  it('a hold counts its lease less the drift allowance (leaseMs × 1 % + 2 ms) from when its grant was sent', () => {
    expect(hold('a', 10_000, 1_000).validUntil).toBe(1_000 + 10_000 - 102);
    expect(hold('b', 30, 0).validUntil).toBeCloseTo(30 - 2.3, 9);
  });

  it('renews holds due within a sixth of a lease in one call', async () => {
    const { watchdog, calls, renew } = setup();
    const t0 = now();
    // Lease 6 s, so a tick takes every hold due within the next 1 s.
    const a = hold('a', 6_000, t0 - 1_850); // due at t0 + 150
    const b = hold('b', 6_000, t0 - 1_250); // due at t0 + 750: same batch
    const c = hold('c', 6_000, t0 - 350); // due at t0 + 1650: not in it
    watchdog.add(c);
    watchdog.add(a);
    watchdog.add(b);
    const call = await calls.nth(0);
    expect(renew).toHaveBeenCalledTimes(1);
    expect(call.holds).toHaveLength(2);
    expect(call.holds).toContain(a);
    expect(call.holds).toContain(b);
    expect(call.holds).not.toContain(c);
    call.resolve([true, true]);
    await settle();
    // One call, one send time: both leases now end at the same instant.
    expect(a.validUntil).toBe(b.validUntil);
  });

  it('never renews a hold without autoExtend and declares it lost once its lease passes', async () => {
    const { watchdog, renew, lost, onLost } = setup();
    const h = hold('a', 90, now(), false);
    watchdog.add(h);
    const event = await lost.nth(0);
    expect(event.hold).toBe(h);
    expect(event.reason).toBe('lease-expired');
    expect(event.at).toBeGreaterThanOrEqual(h.validUntil);
    expect(onLost).toHaveBeenCalledTimes(1);
    expect(onLost).toHaveBeenCalledWith(h, 'lease-expired');
    expect(renew).not.toHaveBeenCalled();
    expect(watchdog.size).toBe(0);
  });

  it('declares lost, as not-in-redis, each hold the renewal answers false for', async () => {
    const { watchdog, calls, onLost } = setup();
    const t0 = now();
    const a = hold('a', 6_000, t0 - 1_900);
    const b = hold('b', 6_000, t0 - 1_900);
    watchdog.add(a);
    watchdog.add(b);
    const call = await calls.nth(0);
    expect(call.holds).toEqual([a, b]);
    const validBefore = a.validUntil;
    call.resolve([true, false]);
    await settle();
    expect(onLost).toHaveBeenCalledTimes(1);
    expect(onLost).toHaveBeenCalledWith(b, 'not-in-redis');
    expect(watchdog.list()).toEqual([a]);
    expect(a.validUntil).toBeGreaterThan(validBefore);
  });

  it('reports a failed renewal and retries it about 250 ms later', async () => {
    const error = new Error('connection reset');
    const { watchdog, calls, onError, onLost } = setup((call) => {
      if (calls.items.length === 1) call.reject(error);
      else call.resolve([true]);
    });
    const t0 = now();
    // Lease 3 s, due in 150 ms; a normal renewal would come only a third of a lease (1 s) later.
    const h = hold('a', 3_000, t0 - 850);
    watchdog.add(h);
    const first = await calls.nth(0);
    const second = await calls.nth(1);
    await settle();
    expect(onError).toHaveBeenCalledTimes(1);
    expect(onError).toHaveBeenCalledWith(error, [h]);
    expect(second.holds).toEqual([h]);
    expect(second.at - first.at).toBeGreaterThanOrEqual(250 - EARLY);
    expect(second.at - first.at).toBeLessThan(250 + 500);
    expect(h.validUntil).toBeGreaterThan(second.at + 3_000 - 32 - EARLY);
    expect(onLost).not.toHaveBeenCalled();
    expect(watchdog.list()).toEqual([h]);
  });

  it('keeps retrying a failing renewal while the lease lasts, then declares it lease-expired', async () => {
    const { watchdog, calls, lost, onError, renew } = setup((call) => call.reject(new Error('down')));
    const t0 = now();
    // Lease 1.5 s, due in 150 ms, runs out in 1.15 s: room for a few retries 250 ms apart.
    const h = hold('a', 1_500, t0 - 350);
    const validUntil = h.validUntil;
    watchdog.add(h);
    const event = await lost.nth(0);
    expect(event.hold).toBe(h);
    expect(event.reason).toBe('lease-expired');
    expect(event.at).toBeGreaterThanOrEqual(validUntil);
    const times = calls.items.map((c) => c.at);
    expect(times.length).toBeGreaterThanOrEqual(2);
    // Each retry comes 250 ms after the failure; none is sent when that would be at or after the lease's end.
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(250 - EARLY);
    // Never a renewal once the lease had run out.
    for (const at of times) expect(at).toBeLessThan(validUntil);
    expect(onError).toHaveBeenCalledTimes(renew.mock.calls.length);
    expect(watchdog.size).toBe(0);
  });

  it('sends no last-moment retry when a failed renewal leaves less than the retry delay of lease', async () => {
    const { watchdog, calls, lost, onError } = setup((call) => call.reject(new Error('down')));
    // Lease 600 ms, due now, runs out in 200 ms: a retry 250 ms after the failure would come too late.
    const h = hold('a', 600, now() - 400);
    watchdog.add(h);
    const event = await lost.nth(0);
    expect(event.reason).toBe('lease-expired');
    await delay(50);
    expect(calls.items).toHaveLength(1);
    expect(onError).toHaveBeenCalledTimes(1);
  });

  it('declares a hold lost when its lease runs out while the renewal hangs, and keeps it lost', async () => {
    const { watchdog, calls, lost, onLost } = setup();
    const h = hold('a', 600, now() - 150); // due in 50 ms, lease ends in 450 ms
    watchdog.add(h);
    const call = await calls.nth(0);
    const event = await lost.nth(0);
    expect(event.reason).toBe('lease-expired');
    expect(event.at).toBeGreaterThanOrEqual(h.validUntil);
    const validUntil = h.validUntil;
    call.resolve([true]);
    await settle();
    expect(h.validUntil).toBe(validUntil);
    expect(onLost).toHaveBeenCalledTimes(1);
    expect(watchdog.size).toBe(0);
  });

  it('never sends a second renewal of a hold while one is in flight', async () => {
    const { watchdog, calls, lost, renew } = setup();
    const t0 = now();
    const a = hold('a', 900, t0 - 250); // due at t0 + 50, lease ends at t0 + 650
    watchdog.add(a);
    const first = await calls.nth(0);
    expect(first.holds).toEqual([a]);
    // While its renewal is unanswered, the hold is due again and again; the watchdog waits for the lease's end,
    // rather than resending it or spinning with zero-delay timers.
    const timers = jest.spyOn(globalThis, 'setTimeout');
    let event: LostCall;
    let timersSet: number;
    try {
      event = await lost.nth(0);
    } finally {
      timersSet = timers.mock.calls.length;
      timers.mockRestore();
    }
    expect(event.hold).toBe(a);
    expect(event.reason).toBe('lease-expired');
    expect(timersSet).toBeLessThan(20);
    expect(renew).toHaveBeenCalledTimes(1);
  });

  it('renews other holds on time while one renewal hangs', async () => {
    const { watchdog, calls, onLost } = setup();
    const t0 = now();
    const a = hold('a', 6_000, t0 - 1_950); // due at t0 + 50
    const b = hold('b', 1_200, t0 + 300); // due at t0 + 700, outside a's batch (its window is 200 ms)
    watchdog.add(a);
    watchdog.add(b);
    const first = await calls.nth(0);
    expect(first.holds).toEqual([a]);
    const second = await calls.nth(1);
    expect(second.holds).toEqual([b]);
    expect(second.at).toBeGreaterThanOrEqual(b.nextRenewAt - b.leaseMs / 6 - EARLY);
    second.resolve([true]);
    await settle();
    expect(b.validUntil).toBeCloseTo(leaseDeadline(second.at, b.leaseMs), -1);
    expect(onLost).not.toHaveBeenCalled();
    first.resolve([true]);
  });

  it('sends the most urgent holds first, in batches of batchSize, at most maxInFlight calls at once', async () => {
    const { watchdog, calls, renew } = setup(undefined, { batchSize: 2, maxInFlight: 2 });
    const t0 = now();
    // Five holds due together, with leases ending in a known order: e, c, a, d, b.
    const ends: Record<string, number> = { a: 3, b: 5, c: 2, d: 4, e: 1 };
    for (const [key, rank] of Object.entries(ends)) watchdog.add(hold(key, 3_000, t0 - 960 - (6 - rank) * 10));
    const first = await calls.nth(0);
    const second = await calls.nth(1);
    await delay(50);
    expect(renew).toHaveBeenCalledTimes(2);
    expect(first.holds.map((h) => h.key)).toEqual(['e', 'c']);
    expect(second.holds.map((h) => h.key)).toEqual(['a', 'd']);
    first.resolve([true, true]);
    const third = await calls.nth(2);
    expect(third.holds.map((h) => h.key)).toEqual(['b']);
    second.resolve([true, true]);
    third.resolve([true]);
  });

  it('reports renewals sent with less than a third of the lease left', async () => {
    const { watchdog, calls, onBehind } = setup();
    const h = hold('a', 3_000, now() - 2_100); // renewal overdue: 900 ms of its lease left
    watchdog.add(h);
    const call = await calls.nth(0);
    expect(onBehind).toHaveBeenCalledTimes(1);
    const [late, sent, leftMs] = onBehind.mock.calls[0] as [number, number, number];
    expect([late, sent]).toEqual([1, 1]);
    expect(leftMs).toBeGreaterThan(800);
    expect(leftMs).toBeLessThan(1_000);
    call.resolve([true]);
  });

  it('drops an ended hold whose lease ran out without declaring it lost', async () => {
    const { watchdog, lost, onLost } = setup();
    const t0 = now();
    const ended = hold('a', 60, t0, false);
    ended.ended = true; // its release is on the way
    const other = hold('b', 200, t0, false);
    watchdog.add(ended);
    watchdog.add(other);
    const event = await lost.nth(0);
    expect(event.hold).toBe(other);
    expect(onLost).toHaveBeenCalledTimes(1);
    expect(watchdog.size).toBe(0);
  });

  it('stops renewing a removed hold', async () => {
    const { watchdog, calls } = setup();
    const t0 = now();
    const a = hold('a', 6_000, t0 - 1_950); // due at t0 + 50
    const b = hold('b', 6_000, t0 - 1_700); // due at t0 + 300, so in a's batch had a stayed
    watchdog.add(a);
    watchdog.add(b);
    watchdog.remove(a);
    expect(watchdog.list()).toEqual([b]);
    const call = await calls.nth(0);
    expect(call.holds).toEqual([b]);
  });

  it('never declares a removed hold lost', async () => {
    const { watchdog, lost, onLost } = setup();
    const t0 = now();
    const a = hold('a', 60, t0, false);
    const b = hold('b', 200, t0, false);
    watchdog.add(a);
    watchdog.add(b);
    watchdog.remove(a);
    const event = await lost.nth(0);
    expect(event.hold).toBe(b);
    expect(onLost).toHaveBeenCalledTimes(1);
  });

  it('drops a hold removed while its renewal is in flight', async () => {
    const { watchdog, calls, onLost } = setup();
    const h = hold('a', 6_000, now() - 1_950);
    watchdog.add(h);
    const call = await calls.nth(0);
    const validUntil = h.validUntil;
    watchdog.remove(h);
    call.resolve([false]);
    await settle();
    expect(onLost).not.toHaveBeenCalled();
    expect(h.validUntil).toBe(validUntil);
    expect(watchdog.size).toBe(0);
  });

  it('forgets every hold on stop and takes no new ones', async () => {
    const { watchdog, renew, onLost } = setup();
    const t0 = now();
    watchdog.add(hold('a', 90, t0)); // due at t0 + 30
    watchdog.add(hold('b', 60, t0, false)); // lost at t0 + 60
    watchdog.stop();
    expect(watchdog.size).toBe(0);
    expect(watchdog.list()).toEqual([]);
    watchdog.add(hold('c', 60, t0, false));
    expect(watchdog.size).toBe(0);
    // Everything above would have fired within 60 ms; wait well past that.
    await delay(300);
    expect(renew).not.toHaveBeenCalled();
    expect(onLost).not.toHaveBeenCalled();
  });

  describe('its timer (Jest fake timers: only setTimeout is faked here, the clock stays real)', () => {
    afterEach(() => {
      jest.useRealTimers();
    });

    it('keeps one timer for many holds and clears it on stop', () => {
      jest.useFakeTimers();
      const { watchdog } = setup();
      const t0 = now();
      for (let i = 0; i < 20; i++) watchdog.add(hold(`k${i}`, 6_000, t0 - i * 10));
      expect(jest.getTimerCount()).toBe(1);
      watchdog.stop();
      expect(jest.getTimerCount()).toBe(0);
    });

    it('clears its timer when the last hold is removed', () => {
      jest.useFakeTimers();
      const { watchdog } = setup();
      const a = hold('a', 6_000, now());
      const b = hold('b', 6_000, now());
      watchdog.add(a);
      watchdog.add(b);
      watchdog.remove(a);
      expect(jest.getTimerCount()).toBe(1);
      watchdog.remove(b);
      expect(jest.getTimerCount()).toBe(0);
    });
  });

  it('ignores the answer of a renewal in flight when stopped', async () => {
    const { watchdog, calls, onLost, onError } = setup();
    const h = hold('a', 6_000, now() - 1_950);
    watchdog.add(h);
    const call = await calls.nth(0);
    watchdog.stop();
    call.resolve([false]);
    await settle();
    expect(onLost).not.toHaveBeenCalled();
    expect(onError).not.toHaveBeenCalled();
  });
});
