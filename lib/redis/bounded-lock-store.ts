import { performance } from 'node:perf_hooks';
import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import type { LockInfo, LockMode } from '../types/lock.types.js';
import type {
  AcquireCall,
  AcquireReply,
  LockRef,
  LockStore,
  ReleaseReply,
  RenewCall,
  StorePing,
  WaitingCall,
  WaitingReply,
  WakeUp,
  WakeUpSubscription,
} from '../store/lock-store.js';
import { TIMED_OUT } from '../store/timed-out.js';
import { grantedReplyOf } from './replica-wait.js';

/** How much longer than the command timeout a call may wait behind this process's own commands while Redis answers. */
export const MAX_BACKLOG_FACTOR = 10;

/** A call's timer firing this much later than due means the event loop was stalled, in milliseconds. */
const STALL_MS = 50;

/** The answer of an `acquire` that came (or failed) after its caller was told it timed out. */
const lateAcquires = new WeakMap<object, Promise<AcquireReply>>();

/**
 * The still-running acquire behind a timed-out `acquire` error: it may yet be granted (Redis paused, a reply held
 * up by the network), and then the grant must be undone. For an `acquire` the store failed after a grant
 * (`waitForReplicas` not met), that grant. `undefined` for other errors.
 */
export function lateAcquireOf(err: unknown): Promise<AcquireReply> | undefined {
  return typeof err === 'object' && err !== null ? lateAcquires.get(err) : undefined;
}

/**
 * Every call to the store bounded by the command timeout, and every failure a `LockError`: no call waits longer
 * for Redis than `timeoutMs`, whatever the connection does (paused server, black-holed network, a client with an
 * unbounded offline queue passed in by the application), and no raw driver error gets out.
 */
export class BoundedLockStore implements LockStore {
  /** When Redis last answered a call of this store (performance.now()). */
  private lastAnswerAt = Number.NEGATIVE_INFINITY;
  /** When this process last came back from a stall (a timer of a call fired late). */
  private resumedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly inner: LockStore,
    private readonly timeoutMs: number,
  ) {}

  /** When Redis last answered a call of this store (performance.now()). */
  get lastAnswer(): number {
    return this.lastAnswerAt;
  }

  lock(key: string): LockRef {
    return this.inner.lock(key);
  }

  acquire(call: AcquireCall): Promise<AcquireReply> {
    const pending = this.inner.acquire(call);
    return this.bound(pending, 'acquire', call.lock.key, (err, failure) => {
      if (failure === TIMED_OUT) {
        // Keep the attempt: if it lands after all, the caller undoes it.
        lateAcquires.set(err, pending);
        pending.catch(() => undefined);
        return;
      }
      // A grant the store could not stand by (replicas did not confirm it): the caller undoes it, without re-sending.
      const granted = grantedReplyOf(failure);
      if (granted) lateAcquires.set(err, Promise.resolve(granted));
    });
  }

  release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs = 0): Promise<ReleaseReply> {
    return this.bound(this.inner.release(lock, token, seq, holdAtLeastMs), 'release', lock.key);
  }

  renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    return this.bound(this.inner.renew(holds), 'renew', holds.length === 1 ? holds[0].lock.key : undefined);
  }

  extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return this.bound(this.inner.extend(lock, token, ms), 'extend', lock.key);
  }

  cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    return this.bound(this.inner.cancelWait(lock, mode, waiterId), 'cancelWait', lock.key);
  }

  keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    return this.bound(this.inner.keepWaiting(waits), 'keepWaiting', waits.length === 1 ? waits[0].lock.key : undefined);
  }

  forceRelease(lock: LockRef): Promise<boolean> {
    return this.bound(this.inner.forceRelease(lock), 'forceRelease', lock.key);
  }

  inspect(lock: LockRef): Promise<LockInfo | null> {
    return this.bound(this.inner.inspect(lock), 'inspect', lock.key);
  }

  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    const subscription = this.inner.listen(lock, onWakeUp);
    if (subscription.live) return subscription;
    // Waiters bound their wait for the subscription themselves; only its failure is translated here.
    const ready = subscription.ready.catch((err: unknown) => {
      throw this.inner.describeFailure(err, 'subscribe', lock.key, this.timeoutMs);
    });
    ready.catch(() => undefined);
    return { live: false, ready, stop: () => subscription.stop() };
  }

  isListening(lock: LockRef): boolean {
    return this.inner.isListening(lock);
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    return this.inner.describeFailure(failure, operation, key, timeoutMs);
  }

  ping(timeoutMs: number): Promise<StorePing> {
    return this.inner.ping(timeoutMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Another call on this store's Redis (a semaphore's own), bounded as these are. */
  within<T>(pending: Promise<T>, operation: LockOperation, key: string | undefined): Promise<T> {
    return this.bound(pending, operation, key);
  }

  /**
   * `pending`, or a `LockError` once Redis has been silent for `timeoutMs`: no answer to this call, nor to any other
   * call of this store, for that long while this process was running. While Redis keeps answering, a call queued
   * behind this process's own burst of commands (100,000 releases at once) waits its turn, up to
   * `MAX_BACKLOG_FACTOR × timeoutMs`; a paused, dead or cut-off Redis answers nothing, so calls fail `timeoutMs` after
   * its last answer. Time this process itself was stalled (a blocked event loop: its commands may not even have
   * left it) does not count as silence. (`onFailure` sees the error first, with what the call failed with:
   * `TIMED_OUT` or the store's own failure.)
   */
  private bound<T>(
    pending: Promise<T>,
    operation: LockOperation,
    key: string | undefined,
    onFailure?: (err: LockError, failure: unknown) => void,
  ): Promise<T> {
    const startedAt = performance.now();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout;
      let dueAt = startedAt + this.timeoutMs;
      const arm = (ms: number) => {
        dueAt = performance.now() + ms;
        timer = setTimeout(fired, ms);
      };
      const fired = () => {
        // A timer firing late means the event loop was stalled: Redis may have answered meanwhile, unread.
        if (performance.now() - dueAt > STALL_MS) this.resumedAt = performance.now();
        // Timers run before I/O in each turn of the event loop: decide after the I/O of this turn.
        setImmediate(decide);
      };
      const decide = () => {
        if (settled) return;
        const now = performance.now();
        const silentMs = now - Math.max(this.lastAnswerAt, this.resumedAt);
        if (silentMs < this.timeoutMs && now - startedAt < this.timeoutMs * MAX_BACKLOG_FACTOR) {
          arm(this.timeoutMs - silentMs);
          return;
        }
        settled = true;
        const err = this.inner.describeFailure(TIMED_OUT, operation, key, this.timeoutMs);
        onFailure?.(err, TIMED_OUT);
        reject(err);
      };
      arm(this.timeoutMs);
      pending.then(
        (value) => {
          this.lastAnswerAt = performance.now();
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          const described = this.inner.describeFailure(err, operation, key, this.timeoutMs);
          onFailure?.(described, err);
          reject(described);
        },
      );
    });
  }
}
