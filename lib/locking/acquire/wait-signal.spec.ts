import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { WaitSignal } from './wait-signal.js';

/** Tracks whether `promise` has settled; read `.done` after letting microtasks run. */
function track(promise: Promise<void>): { readonly done: boolean } {
  const state = { done: false };
  void promise.then(() => {
    state.done = true;
  });
  return state;
}

/** Lets pending promise callbacks run without moving the fake clock. */
async function flush(): Promise<void> {
  await jest.advanceTimersByTimeAsync(0);
}

function abortListeners(signal: AbortSignal): number {
  return getEventListeners(signal, 'abort').length;
}

describe('WaitSignal', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('remembers a fire before the wait: the wait resolves at once', async () => {
    const s = new WaitSignal();
    s.fire();
    expect(s.fired).toBe(true);
    const w = track(s.wait(60_000));
    await flush();
    expect(w.done).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('keeps a fire for every later wait until reset', async () => {
    const s = new WaitSignal();
    s.fire();
    await s.wait(60_000);
    const again = track(s.wait(60_000));
    await flush();
    expect(again.done).toBe(true);
  });

  it('forgets a fire on reset', async () => {
    const s = new WaitSignal();
    s.fire();
    s.reset();
    expect(s.fired).toBe(false);
    const w = track(s.wait(1_000));
    await jest.advanceTimersByTimeAsync(999);
    expect(w.done).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(w.done).toBe(true);
  });

  it('resolves a pending wait when fired, and clears its timer', async () => {
    const s = new WaitSignal();
    const w = track(s.wait(60_000));
    await jest.advanceTimersByTimeAsync(5_000);
    expect(w.done).toBe(false);
    expect(jest.getTimerCount()).toBe(1);
    s.fire();
    await flush();
    expect(w.done).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it.each([0, 1, 250, 10_000])('resolves after %p ms when not fired', async (ms) => {
    const s = new WaitSignal();
    const w = track(s.wait(ms));
    if (ms > 0) {
      await jest.advanceTimersByTimeAsync(ms - 1);
      expect(w.done).toBe(false);
    }
    await jest.advanceTimersByTimeAsync(1);
    expect(w.done).toBe(true);
    expect(s.fired).toBe(false);
  });

  it('resolves at once when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    const w = track(new WaitSignal().wait(60_000, ac.signal));
    await flush();
    expect(w.done).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    expect(abortListeners(ac.signal)).toBe(0);
  });

  it('resolves when the signal aborts later, and clears its timer', async () => {
    const ac = new AbortController();
    const w = track(new WaitSignal().wait(60_000, ac.signal));
    await jest.advanceTimersByTimeAsync(100);
    expect(w.done).toBe(false);
    ac.abort(new Error('cancelled'));
    await flush();
    expect(w.done).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it.each<[string, (s: WaitSignal, ac: AbortController) => Promise<void>]>([
    ['fired', async (s) => s.fire()],
    [
      'timed out',
      async () => {
        await jest.advanceTimersByTimeAsync(1_000);
      },
    ],
  ])('removes its abort listener once %s', async (_name, end) => {
    const ac = new AbortController();
    const s = new WaitSignal();
    const w = track(s.wait(1_000, ac.signal));
    expect(abortListeners(ac.signal)).toBe(1);
    await end(s, ac);
    await flush();
    expect(w.done).toBe(true);
    expect(abortListeners(ac.signal)).toBe(0);
  });

  it('does not pile up listeners over 50 waits on one AbortSignal', async () => {
    const ac = new AbortController();
    const s = new WaitSignal();
    for (let i = 0; i < 50; i++) {
      s.reset();
      const w = track(s.wait(1_000, ac.signal));
      expect(abortListeners(ac.signal)).toBe(1);
      if (i % 2 === 0) s.fire();
      else await jest.advanceTimersByTimeAsync(1_000);
      await flush();
      expect(w.done).toBe(true);
    }
    expect(abortListeners(ac.signal)).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('takes a fire after a timed-out wait as a fresh wake-up', async () => {
    const s = new WaitSignal();
    const first = track(s.wait(10));
    await jest.advanceTimersByTimeAsync(10);
    expect(first.done).toBe(true);
    s.fire();
    expect(s.fired).toBe(true);
    const second = track(s.wait(60_000));
    await flush();
    expect(second.done).toBe(true);
  });

  it('gives a signal shared by many waits one listener, and removes it with the last wait', async () => {
    const ac = new AbortController();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const waits = Array.from({ length: 50 }, () => track(new WaitSignal().wait(60_000, ac.signal)));
      expect(abortListeners(ac.signal)).toBe(1);
      const leaving = new WaitSignal();
      const early = track(leaving.wait(60_000, ac.signal));
      leaving.fire();
      await flush();
      expect(early.done).toBe(true);
      expect(abortListeners(ac.signal)).toBe(1);
      ac.abort();
      await flush();
      expect(waits.every((w) => w.done)).toBe(true);
      expect(abortListeners(ac.signal)).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('removes the shared listener once every wait on the signal is over', async () => {
    const ac = new AbortController();
    const signals = Array.from({ length: 3 }, () => new WaitSignal());
    const waits = signals.map((s) => track(s.wait(60_000, ac.signal)));
    expect(abortListeners(ac.signal)).toBe(1);
    for (const s of signals) s.fire();
    await flush();
    expect(waits.every((w) => w.done)).toBe(true);
    expect(abortListeners(ac.signal)).toBe(0);
  });
});
