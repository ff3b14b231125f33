import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import type { LockInfo, LockMode } from '../types/lock.types.js';
import type { PermitInfo } from '../types/permit.types.js';
import type { LockKeys } from './key-layout.js';
import { kindConflict } from '../store/kind-conflict.js';
import { holderIdentity } from './lock-script-codec.js';
import type {
  AcquireCall,
  AcquireReply,
  LockRef,
  LockStoreContext,
  ReleaseReply,
  RenewCall,
  StorePing,
  WaitingCall,
  WaitingReply,
  WakeUp,
  WakeUpSubscription,
} from '../store/lock-store.js';
import { renewScripts } from './lease-renewals.js';
import type { RenewScripts } from './lease-renewals.js';
import { waiterKeys } from './waiter-heartbeat.js';
import type { HeartbeatScripts } from './waiter-heartbeat.js';
import { permitArgs, permitInspectReply, permitReply } from './permit-codec.js';
import {
  PERMIT_CANCEL_WAIT,
  PERMIT_FORCE_RELEASE,
  PERMIT_KEEP_WAITING,
  PERMIT_KEEP_WAITING_CROSS_SLOT,
  PERMIT_INSPECT,
  PERMIT_SET_LIMIT,
} from './scripts/permit-control-scripts.js';
import {
  PERMIT_ACQUIRE,
  PERMIT_ACQUIRE_BATCH,
  PERMIT_EXTEND,
  PERMIT_RELEASE,
  PERMIT_RELEASE_BATCH,
  PERMIT_RENEW_MANY,
  PERMIT_RENEW_MANY_CROSS_SLOT,
} from './scripts/permit-scripts.js';
import type { PermitHolder, PermitRef, PermitStore } from '../store/permit-store.js';
import type { RedisLockStore } from './redis-lock-store.js';
import type { ScriptBatcher } from './script-batcher.js';

/** Semaphore names kept ready-made (per key and limit); the cache starts over when full. */
const REFS_CACHE_SIZE = 10_000;

/** The watchdog's renewals of permits (`LeaseRenewals`): per slot, and per Cluster node where the server allows it. */
const PERMIT_RENEWALS: RenewScripts = renewScripts(PERMIT_RENEW_MANY, PERMIT_RENEW_MANY_CROSS_SLOT);

/** The semaphores' heartbeat (`WaiterHeartbeat`): ARGV waiter id and fair flag of each waiter. */
const PERMIT_HEARTBEAT: HeartbeatScripts = {
  perSlot: PERMIT_KEEP_WAITING,
  crossSlot: PERMIT_KEEP_WAITING_CROSS_SLOT,
  keys: waiterKeys,
  args: (wait) => [wait.waiterId, wait.fair ? '1' : '0'],
};

type PermitKeys = LockKeys & PermitRef;

/**
 * Semaphores on the Redis of a `RedisLockStore` (standalone, Sentinel or Cluster): its connections, its script
 * gateway (SHA, Cluster variants, `waitForReplicas`) and its wake-up subscriptions. A semaphore uses the key names of
 * a lock on the same key (one hash tag: one slot on a Cluster), and its own scripts (`permit-scripts.ts`), renewals
 * and `extend` included: the locks' RENEW_MANY and EXTEND take a holder record without a lease for a lock's
 * single-holder form and renew it, which for a permit would bring back one that ran out.
 */
export class RedisPermitStore implements PermitStore {
  private readonly refs = new Map<string, PermitKeys>();
  private readonly limits = new Map<string, number>();
  private readonly identity: string;
  /** Per-tick batches on a standalone Redis (`ScriptGateway.batcher`; `undefined` where batching does not apply). */
  private readonly acquires: ScriptBatcher | undefined;
  private readonly releases: ScriptBatcher | undefined;

  constructor(
    private readonly locks: RedisLockStore,
    context: LockStoreContext,
  ) {
    this.identity = holderIdentity(context.identity);
    this.acquires = locks.gateway.batcher(PERMIT_ACQUIRE, PERMIT_ACQUIRE_BATCH);
    this.releases = locks.gateway.batcher(PERMIT_RELEASE, PERMIT_RELEASE_BATCH);
  }

  lock(key: string): LockRef {
    return this.locks.lock(key);
  }

  permit(key: string, limit: number): PermitRef {
    const id = `${limit}|${key}`;
    let ref = this.refs.get(id);
    if (!ref) {
      if (this.refs.size >= REFS_CACHE_SIZE) this.refs.clear();
      ref = { ...this.locks.lock(key), limit };
      this.refs.set(id, ref);
    }
    return ref;
  }

  storedLimit(key: string): number | undefined {
    return this.limits.get(key);
  }

  /** PERMIT_ACQUIRE (ARGV: `permitArgs`), followed by `WAIT` for a grant with `waitForReplicas`. */
  async acquire(call: AcquireCall): Promise<AcquireReply> {
    const ref = call.lock as PermitKeys;
    const args = permitArgs(call, this.identity, ref.limit);
    const gateway = this.locks.gateway;
    // Acquisitions asked for in one tick go out as one script call where batching applies (as the locks').
    const acked = this.acquires
      ? { reply: await this.acquires.call(ref.granting, args), acked: 0, wanted: 0 }
      : await gateway.runAcked(PERMIT_ACQUIRE, ref.granting, args);
    const { reply, limit } = permitReply(ref.key, acked.reply);
    this.remember(ref.key, limit);
    const short = reply.granted ? gateway.shortfall(acked, reply) : undefined;
    if (short) throw short;
    return reply;
  }

  /** PERMIT_RELEASE. A permit has one level: `seq` and `holdAtLeastMs` do not apply. */
  async release(lock: LockRef, token: string): Promise<ReleaseReply> {
    const keys = (lock as PermitKeys).all;
    const sent = this.releases
      ? this.releases.call(keys, [token])
      : this.locks.gateway.run(PERMIT_RELEASE, keys, [token]);
    return (await sent) === 2 ? 'ended' : 'not-held';
  }

  /**
   * PERMIT_RENEW_MANY per chunk of up to 200 permits, routed as the locks' renewals (`LeaseRenewals`, through the
   * gateway's `write`): on a Cluster, one PERMIT_RENEW_MANY_CROSS_SLOT call per chunk of the permits one master serves.
   */
  renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    return this.locks.renewals.renew(holds, PERMIT_RENEWALS);
  }

  async extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return (await this.locks.gateway.write(PERMIT_EXTEND, (lock as PermitKeys).all, [token, ms])) === 1;
  }

  async cancelWait(lock: LockRef, _mode: LockMode, waiterId: string): Promise<void> {
    await this.locks.gateway.run(PERMIT_CANCEL_WAIT, (lock as PermitKeys).all, [waiterId]);
  }

  /**
   * PERMIT_KEEP_WAITING per chunk of up to 200 waiters, routed as the locks' heartbeat (`WaiterHeartbeat`): on a
   * Cluster, one PERMIT_KEEP_WAITING_CROSS_SLOT call per chunk of the waiters one master serves.
   */
  keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    return this.locks.heartbeat.keepWaiting(waits, PERMIT_HEARTBEAT);
  }

  async forceRelease(lock: LockRef): Promise<boolean> {
    return (await this.forceReleasePermits(lock as PermitRef, {})) > 0;
  }

  async forceReleasePermits(ref: PermitRef, which: PermitHolder): Promise<number> {
    const freed = (await this.locks.gateway.run(PERMIT_FORCE_RELEASE, (ref as PermitKeys).all, [
      which.token ?? '',
      which.owner ?? '',
    ])) as number;
    if (freed === -1) throw kindConflict(ref.key, 'lock');
    return freed;
  }

  async setLimit(ref: PermitRef): Promise<number> {
    const before = (await this.locks.gateway.write(PERMIT_SET_LIMIT, (ref as PermitKeys).all, [ref.limit])) as number;
    if (before === -1) throw kindConflict(ref.key, 'lock');
    this.remember(ref.key, ref.limit);
    return before;
  }

  /** Never called with a permit (the engine inspects semaphores with `inspectPermits`). */
  inspect(lock: LockRef): Promise<LockInfo | null> {
    return this.locks.inspect(lock);
  }

  async inspectPermits(ref: PermitRef): Promise<PermitInfo | null> {
    const info = permitInspectReply(ref.key, await this.locks.gateway.run(PERMIT_INSPECT, (ref as PermitKeys).all, []));
    if (info) this.remember(ref.key, info.limit);
    return info;
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

  /** The connections are the lock store's: it closes them. */
  async close(): Promise<void> {}

  private remember(key: string, limit: number): void {
    if (this.limits.size >= REFS_CACHE_SIZE && !this.limits.has(key)) this.limits.clear();
    this.limits.set(key, limit);
  }
}
