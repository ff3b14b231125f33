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
} from './lock-store.js';
import { isPermitRef } from './permit-store.js';
import type { PermitStore } from './permit-store.js';

/**
 * One store for the engine's shared machinery (waiting room, watchdog, hold keeper, leftovers): calls on a lock go
 * to the lock store, calls on a semaphore (`PermitRef`) to the permit store. Batched calls (renewals, the waiters'
 * heartbeat) are split by kind and sent to both at once.
 */
export class StoreRouter implements LockStore {
  constructor(
    readonly locks: LockStore,
    readonly permits: PermitStore | undefined,
  ) {}

  lock(key: string): LockRef {
    return this.locks.lock(key);
  }

  acquire(call: AcquireCall): Promise<AcquireReply> {
    return this.of(call.lock).acquire(call);
  }

  release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs?: number): Promise<ReleaseReply> {
    return this.of(lock).release(lock, token, seq, holdAtLeastMs);
  }

  renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    return this.split(
      holds,
      (h) => h.lock,
      (store, part) => store.renew(part),
    );
  }

  extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return this.of(lock).extend(lock, token, ms);
  }

  cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    return this.of(lock).cancelWait(lock, mode, waiterId);
  }

  keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    return this.split(
      waits,
      (w) => w.lock,
      (store, part) => store.keepWaiting(part),
    );
  }

  forceRelease(lock: LockRef): Promise<boolean> {
    return this.of(lock).forceRelease(lock);
  }

  inspect(lock: LockRef): Promise<LockInfo | null> {
    return this.of(lock).inspect(lock);
  }

  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    return this.of(lock).listen(lock, onWakeUp);
  }

  isListening(lock: LockRef): boolean {
    return this.of(lock).isListening(lock);
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    return this.locks.describeFailure(failure, operation, key, timeoutMs);
  }

  ping(timeoutMs: number): Promise<StorePing> {
    return this.locks.ping(timeoutMs);
  }

  async close(): Promise<void> {
    await this.permits?.close();
    await this.locks.close();
  }

  private of(ref: LockRef): LockStore {
    return this.permits && isPermitRef(ref) ? this.permits : this.locks;
  }

  /** `call` on the items of each kind (one call per kind present), the results back in the items' order. */
  private async split<T, R>(
    items: readonly T[],
    refOf: (item: T) => LockRef,
    call: (store: LockStore, part: T[]) => Promise<R[]>,
  ): Promise<R[]> {
    const permits = this.permits;
    if (!permits || !items.some((item) => isPermitRef(refOf(item)))) return call(this.locks, items as T[]);
    const lockItems: number[] = [];
    const permitItems: number[] = [];
    items.forEach((item, i) => (isPermitRef(refOf(item)) ? permitItems : lockItems).push(i));
    const out = new Array<R>(items.length);
    await Promise.all(
      [
        { store: this.locks, indexes: lockItems },
        { store: permits as LockStore, indexes: permitItems },
      ]
        .filter((part) => part.indexes.length > 0)
        .map(async ({ store, indexes }) => {
          const results = await call(
            store,
            indexes.map((i) => items[i]),
          );
          indexes.forEach((i, j) => (out[i] = results[j]));
        }),
    );
    return out;
  }
}
