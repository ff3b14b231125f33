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
  WakeUp,
  WakeUpSubscription,
} from './lock-store.js';
import { TIMED_OUT } from './redis-failures.js';

/** The answer of an `acquire` that came (or failed) after its caller was told it timed out. */
const lateAcquires = new WeakMap<object, Promise<AcquireReply>>();

/**
 * The still-running acquire behind a timed-out `acquire` error: it may yet be granted (Redis paused, a reply held
 * up by the network), and then the grant must be undone. `undefined` for other errors.
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
  constructor(
    private readonly inner: LockStore,
    private readonly timeoutMs: number,
  ) {}

  lock(key: string): LockRef {
    return this.inner.lock(key);
  }

  acquire(call: AcquireCall): Promise<AcquireReply> {
    const pending = this.inner.acquire(call);
    return this.bound(pending, 'acquire', call.lock.key, (err) => {
      // Keep the attempt: if it lands after all, the caller undoes it.
      lateAcquires.set(err, pending);
      pending.catch(() => undefined);
    });
  }

  release(lock: LockRef, token: string, seq: number | undefined): Promise<ReleaseReply> {
    return this.bound(this.inner.release(lock, token, seq), 'release', lock.key);
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

  /** `pending`, or a `LockError` once `timeoutMs` passed without an answer (`onTimeout` sees that error first). */
  private bound<T>(pending: Promise<T>, operation: LockOperation, key: string | undefined, onTimeout?: (err: LockError) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        const err = this.inner.describeFailure(TIMED_OUT, operation, key, this.timeoutMs);
        onTimeout?.(err);
        reject(err);
      }, this.timeoutMs);
      pending.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(this.inner.describeFailure(err, operation, key, this.timeoutMs));
        },
      );
    });
  }
}
