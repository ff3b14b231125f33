import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import type {
  AcquireCall,
  AcquireReply,
  HolderIdentity,
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
import type { PermitHolder, PermitRef, PermitStore } from '../store/permit-store.js';
import type { LockInfo, LockMode } from '../types/lock.types.js';
import type { PermitInfo } from '../types/permit.types.js';
import type { MemoryLockState, ScriptScope } from './memory-lock-world.js';
import * as scripts from './memory-permit-scripts.js';

/** Runs a script on a key's state in the store's world (`MemoryLockStore.run`). */
type RunScript = <T>(ref: LockRef, script: (state: MemoryLockState, scope: ScriptScope) => T) => T;

/**
 * @internal Semaphores in memory, on the world of a `MemoryLockStore` (same prefix, same keys: a lock and a semaphore
 * cannot share one): the semantics of `RedisPermitStore`. Renewals, extensions and wake-up subscriptions are the
 * lock store's own.
 */
/* eslint-disable @typescript-eslint/require-await -- async on purpose: a store rejects, never throws synchronously */
export class MemoryPermitStore implements PermitStore {
  private readonly limits = new Map<string, number>();

  constructor(
    private readonly locks: LockStore,
    private readonly identity: HolderIdentity,
    private readonly run: RunScript,
  ) {}

  lock(key: string): LockRef {
    return this.locks.lock(key);
  }

  permit(key: string, limit: number): PermitRef {
    return { key, limit };
  }

  storedLimit(key: string): number | undefined {
    return this.limits.get(key);
  }

  async acquire(call: AcquireCall): Promise<AcquireReply> {
    const ref = call.lock as PermitRef;
    const { reply, limit } = this.run(ref, (s, x) => scripts.acquirePermit(s, call, ref.limit, this.identity, x));
    this.limits.set(ref.key, limit);
    return reply;
  }

  async release(lock: LockRef, token: string): Promise<ReleaseReply> {
    return this.run(lock, (s, x) => scripts.releasePermit(s, token, x));
  }

  renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    return this.locks.renew(holds);
  }

  extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return this.locks.extend(lock, token, ms);
  }

  async cancelWait(lock: LockRef, _mode: LockMode, waiterId: string): Promise<void> {
    this.run(lock, (s, x) => scripts.cancelPermitWait(s, waiterId, x));
  }

  async keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    const woken = new Map<MemoryLockState, string[]>();
    return waits.map((wait) => this.run(wait.lock, (s, x) => scripts.keepWaitingForPermit(s, wait, x, woken)));
  }

  async forceRelease(lock: LockRef): Promise<boolean> {
    return (await this.forceReleasePermits(lock as PermitRef, {})) > 0;
  }

  async forceReleasePermits(ref: PermitRef, which: PermitHolder): Promise<number> {
    return this.run(ref, (s, x) => scripts.forceReleasePermits(s, ref.key, which, x));
  }

  async setLimit(ref: PermitRef): Promise<number> {
    const before = this.run(ref, (s, x) => scripts.setPermitLimit(s, ref.key, ref.limit, x));
    this.limits.set(ref.key, ref.limit);
    return before;
  }

  inspect(lock: LockRef): Promise<LockInfo | null> {
    return this.locks.inspect(lock);
  }

  async inspectPermits(ref: PermitRef): Promise<PermitInfo | null> {
    return this.run(ref, (s, x) => scripts.inspectPermits(ref.key, s, x.now));
  }

  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    return this.locks.listen(lock, onWakeUp);
  }

  isListening(lock: LockRef): boolean {
    return this.locks.isListening(lock);
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    return this.locks.describeFailure(failure, operation, key, timeoutMs);
  }

  ping(timeoutMs: number): Promise<StorePing> {
    return this.locks.ping(timeoutMs);
  }

  async close(): Promise<void> {}
}
/* eslint-enable @typescript-eslint/require-await */
