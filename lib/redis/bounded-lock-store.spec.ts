import { performance } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import { BoundedLockStore, lateAcquireOf, MAX_BACKLOG_FACTOR } from './bounded-lock-store.js';
import type { AcquireCall, AcquireReply, LockStore } from '../store/lock-store.js';
import { TIMED_OUT } from '../store/timed-out.js';

/*
 * The deadline logic of BoundedLockStore, over a stand-in store whose answers the test releases by hand (the
 * wrapper's Redis behaviour is covered against real redis-server processes in test/faults/).
 */

const TIMEOUT_MS = 120;

interface Pending {
  readonly op: string;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

function standIn() {
  const pending: Pending[] = [];
  const call = (op: string) =>
    new Promise<never>((resolve, reject) => pending.push({ op, resolve: resolve as (v: unknown) => void, reject }));
  const store = {
    lock: (key: string) => ({ key }),
    acquire: () => call('acquire'),
    release: () => call('release'),
    inspect: () => call('inspect'),
    describeFailure: (failure: unknown, operation: LockOperation, key: string | undefined) =>
      new LockUnavailableError({
        key,
        operation,
        reason: failure === TIMED_OUT ? 'timeout' : 'unreachable',
        detail: 'x',
        cause: failure,
      }),
  } as unknown as LockStore;
  return { store, pending };
}

const lockOf = (key: string) => ({ key });
const acquireCall = (key: string) =>
  ({ lock: lockOf(key), mode: 'write', token: 't', leaseMs: 1_000, seq: 1 }) as unknown as AcquireCall;

async function outcome(p: Promise<unknown>): Promise<{ ms: number; error?: unknown; value?: unknown }> {
  const start = performance.now();
  try {
    const value = await p;
    return { ms: performance.now() - start, value };
  } catch (error) {
    return { ms: performance.now() - start, error };
  }
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('BoundedLockStore', () => {
  it('fails a call Redis does not answer, timeoutMs after it was made, with LockUnavailableError', async () => {
    const { store } = standIn();
    const bounded = new BoundedLockStore(store, TIMEOUT_MS);
    const r = await outcome(bounded.inspect(lockOf('k')));
    expect(r.error).toBeInstanceOf(LockUnavailableError);
    expect((r.error as LockUnavailableError).reason).toBe('timeout');
    expect((r.error as LockUnavailableError).operation).toBe('inspect');
    expect(r.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(r.ms).toBeLessThan(TIMEOUT_MS * 3);
  });

  it('translates a failure of the store', async () => {
    const { store, pending } = standIn();
    const bounded = new BoundedLockStore(store, TIMEOUT_MS);
    const p = outcome(bounded.release(lockOf('k'), 't', 1));
    const cause = new Error('Connection is closed.');
    pending[0].reject(cause);
    const r = await p;
    expect(r.error).toBeInstanceOf(LockUnavailableError);
    expect((r.error as LockUnavailableError).cause).toBe(cause);
  });

  it('lets a call wait its turn behind other calls while Redis keeps answering them', async () => {
    const { store, pending } = standIn();
    const bounded = new BoundedLockStore(store, TIMEOUT_MS);
    const slow = outcome(bounded.inspect(lockOf('slow')));
    // Other calls are answered every 40 ms for 3 timeouts: Redis is alive, working through a backlog.
    for (let i = 0; i < 9; i++) {
      const other = bounded.inspect(lockOf(`other${i}`));
      pending[pending.length - 1].resolve(null);
      await other;
      await delay(40);
    }
    pending[0].resolve(null);
    const r = await slow;
    expect(r.error).toBeUndefined();
    expect(r.ms).toBeGreaterThan(TIMEOUT_MS * 2);
  });

  it(`fails a call after ${MAX_BACKLOG_FACTOR} timeouts even while Redis answers others`, async () => {
    const { store, pending } = standIn();
    const bounded = new BoundedLockStore(store, 30);
    const stuck = outcome(bounded.inspect(lockOf('stuck')));
    let done = false;
    void stuck.then(() => (done = true));
    while (!done) {
      const other = bounded.inspect(lockOf('other'));
      pending[pending.length - 1].resolve(null);
      await other;
      await delay(10);
    }
    const r = await stuck;
    expect(r.error).toBeInstanceOf(LockUnavailableError);
    expect(r.ms).toBeGreaterThanOrEqual(30 * MAX_BACKLOG_FACTOR - 5);
    expect(r.ms).toBeLessThan(30 * MAX_BACKLOG_FACTOR * 3);
  });

  it('does not count a stalled event loop as Redis being silent', async () => {
    const { store, pending } = standIn();
    const bounded = new BoundedLockStore(store, TIMEOUT_MS);
    const p = outcome(bounded.inspect(lockOf('k')));
    // The loop is blocked past the deadline; the answer is handled shortly after it runs again (its command may not
    // even have left the process while the loop was blocked).
    setTimeout(() => pending[0].resolve('answered'), TIMEOUT_MS * 2 + 30);
    const end = performance.now() + TIMEOUT_MS * 2;
    while (performance.now() < end) {
      // blocked
    }
    const r = await p;
    expect(r.error).toBeUndefined();
    expect(r.value).toBe('answered');
  });

  it('keeps the attempt behind a timed-out acquire, so its late grant can be undone', async () => {
    const { store, pending } = standIn();
    const bounded = new BoundedLockStore(store, TIMEOUT_MS);
    const r = await outcome(bounded.acquire(acquireCall('k')));
    const late = lateAcquireOf(r.error);
    expect(late).toBeDefined();
    const grant: AcquireReply = { granted: true, fencingToken: 7, reentered: false };
    pending[0].resolve(grant);
    await expect(late).resolves.toEqual(grant);
    expect(lateAcquireOf(new Error('other'))).toBeUndefined();
  });
});
