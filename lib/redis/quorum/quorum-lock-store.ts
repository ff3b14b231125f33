import type { LockConfigError } from '../../errors/lock-config.error.js';
import type { LockError } from '../../errors/lock.error.js';
import type { LockOperation } from '../../errors/lock-unavailable.error.js';
import type { LockInfo, LockMode } from '../../types/lock.types.js';
import type { RedisConnectionInput } from '../connection.js';
import type { RedisDriver } from '../driver/redis-driver.js';
import type {
  AcquireCall,
  AcquireReply,
  LockRef,
  LockStore,
  LockStoreContext,
  ReleaseReply,
  RenewCall,
  StorePing,
  WaitingCall,
  WaitingReply,
  WakeUp,
  WakeUpSubscription,
} from '../../store/lock-store.js';
import { acquireOnQuorum, withDrift } from './quorum-grant.js';
import { QuorumMasters, laneOf } from './quorum-masters.js';
import { QuorumFailure, countOf, noop, throwRefusal } from './quorum-outcomes.js';
import { describeQuorumFailure, majorityPing, majorityView } from './quorum-reports.js';
import { QuorumUndo } from './quorum-undo.js';

/**
 * Quorum over independent masters (`redis` given as an array of 3 or more connection inputs, each its own master; see
 * docs/topologies.md, "Quorum over independent masters"): one `RedisLockStore` per master, the same scripts on each,
 * and a call counts when a majority (`⌊n/2⌋ + 1`) of the masters agrees. A grant counts only within its validity (the
 * lease minus the time the attempt took minus a drift allowance), a failed attempt is undone on every master, and a
 * hold is lost when a majority no longer has it. The parts:
 *
 * - `QuorumMasters` (quorum-masters.ts): the masters, the per-master bound (`0.9 × commandTimeoutMs`: a master that
 *   is down or paused counts as not answering, and the call is decided as soon as the majority's answers decide
 *   it), the lanes that keep one token's commands on one lock in order on each master, and the delayed-restart rule.
 * - `gather` (quorum-outcomes.ts): every master's outcome, until the answers so far decide the call.
 * - `acquireOnQuorum` (quorum-grant.ts): granting, validity and drift, the reply of an attempt not granted.
 * - `QuorumUndo` (quorum-undo.ts): undo of the grants of an attempt that did not win a majority, with `call.undoSeq`,
 *   and of what a minority still has of a hold a majority lost.
 * - quorum-reports.ts: the majority's view for `inspect`, failures and pings.
 */
export class QuorumLockStore implements LockStore {
  private readonly masters: QuorumMasters;
  private readonly undo: QuorumUndo;

  constructor(
    inputs: readonly RedisConnectionInput[],
    private readonly options: LockStoreContext,
  ) {
    this.masters = new QuorumMasters(inputs, options);
    this.undo = new QuorumUndo(this.masters, options);
  }

  /** @internal The command connection of each master (a key scan reads them all). */
  get commandConnections(): readonly RedisDriver[] {
    return this.masters.list.map((m) => m.store.commandConnection);
  }

  lock(key: string): LockRef {
    // Every master's store names a lock's keys the same way (same prefix): one ref serves them all.
    return this.masters.list[0].store.lock(key);
  }

  acquire(call: AcquireCall): Promise<AcquireReply> {
    return acquireOnQuorum(this.masters, this.undo, call, this.options.commandTimeoutMs);
  }

  async release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs = 0): Promise<ReleaseReply> {
    const lane = laneOf(lock, token);
    const { masters } = this;
    const calls = masters.list.map((m) =>
      masters.inLane(m, lane, () => m.store.release(lock, token, seq, holdAtLeastMs)),
    );
    // The call is decided by a majority; the slower masters' releases go on, and `close` lets them finish.
    for (const call of calls) this.undo.track(call.then(noop, noop));
    const outcomes = await masters.gather(
      calls,
      masters.bound(),
      (outs) =>
        outs.every(Boolean) ||
        (['ended', 'level', 'not-held'] as const).some((r) => countOf(outs, r) >= masters.quorum),
    );
    const answered = masters.answeredOrThrow(outcomes);
    for (const r of ['ended', 'level', 'not-held'] as const) if (countOf(answered, r) >= masters.quorum) return r;
    // No majority agrees: a level goes on somewhere, or the hold ended where it still was.
    if (answered.includes('level')) return 'level';
    return answered.includes('ended') ? 'ended' : 'not-held';
  }

  async renew(engineHolds: readonly RenewCall[]): Promise<boolean[]> {
    const holds = engineHolds.map((h) => ({ ...h, leaseMs: withDrift(h.leaseMs) }));
    const { masters } = this;
    for (const h of holds) masters.useLease(h.leaseMs);
    const n = masters.size;
    const q = masters.quorum;
    const outcomes = await masters.gather(
      masters.list.map((m) => m.store.renew(holds)),
      masters.bound(),
      (outs) => {
        const settled = outs.filter(Boolean).length;
        return holds.every((_, j) => {
          const yes = outs.filter((o) => o?.ok && o.value[j]).length;
          return yes >= q || yes + (n - settled) < q;
        });
      },
    );
    const answered = masters.answeredOrThrow(outcomes);
    return holds.map((hold, j) => {
      if (answered.filter((r) => r[j]).length >= q) return true;
      // Lost on a majority: the engine tells the holder; what a minority still has of it is freed.
      this.undo.freeRemnants(
        hold.lock,
        hold.token,
        outcomes.map((o) => !o?.ok || o.value[j]),
      );
      return false;
    });
  }

  async extend(lock: LockRef, token: string, engineMs: number): Promise<boolean> {
    const ms = withDrift(engineMs);
    const { masters } = this;
    masters.useLease(ms);
    const n = masters.size;
    const outcomes = await masters.gather(
      masters.list.map((m) => m.store.extend(lock, token, ms)),
      masters.bound(),
      (outs) => {
        const yes = countOf(outs, true);
        return yes >= masters.quorum || yes + (n - outs.filter(Boolean).length) < masters.quorum;
      },
    );
    if (masters.answeredOrThrow(outcomes).filter(Boolean).length >= masters.quorum) return true;
    this.undo.freeRemnants(
      lock,
      token,
      outcomes.map((o) => !o?.ok || o.value),
    );
    return false;
  }

  /**
   * Withdraws the waiter on every master, each after the attempts of it still queued for that master (its lane): an
   * attempt that reaches a slow master later would register it again. A withdrawal still running when the call
   * returns (a master slow or down) goes on in the background; `close` lets it finish (bounded).
   */
  async cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    const { masters } = this;
    const lane = masters.waiterLanes.get(waiterId);
    masters.waiterLanes.delete(waiterId);
    const calls = masters.list.map((m) => {
      const cancel = () => m.store.cancelWait(lock, mode, waiterId);
      const call = lane === undefined ? cancel() : masters.inLane(m, lane, cancel);
      // Failures reach the caller through the outcomes below, not the connection-error report.
      this.undo.track(call.then(noop, noop));
      return call;
    });
    const outcomes = await masters.gather(calls, masters.bound(), (outs) => outs.every(Boolean));
    masters.answeredOrThrow(outcomes);
  }

  /**
   * The waiters' heartbeat on every master. A waiter attempts again as soon as any master that answered says so (it
   * may get in there, or its registration is gone there): the attempt re-registers it on every master. Masters that
   * do not answer in time are left out; with fewer than a majority answering the call fails (the waiters keep their
   * own retry timers).
   */
  async keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    const outcomes = await this.masters.gather(
      this.masters.list.map((m) => m.store.keepWaiting(waits)),
      this.masters.bound(),
      (outs) => outs.every(Boolean),
    );
    const answered = this.masters.answeredOrThrow(outcomes);
    return waits.map((_, i) => (answered.some((r) => r[i] === 'attempt') ? 'attempt' : 'waiting'));
  }

  /**
   * Frees the lock on every master; `true` if any master had it held. Refused where a semaphore lives under the key.
   */
  async forceRelease(lock: LockRef): Promise<boolean> {
    const outcomes = await this.masters.gather(
      this.masters.list.map((m) => m.store.forceRelease(lock)),
      this.masters.bound(),
      (outs) => outs.every(Boolean),
    );
    throwRefusal(outcomes);
    return this.masters.answeredOrThrow(outcomes).some(Boolean);
  }

  /** The majority's view (`majorityView`). Waits for every master's answer (each bounded). */
  async inspect(lock: LockRef): Promise<LockInfo | null> {
    const outcomes = await this.masters.gather(
      this.masters.list.map((m) => m.store.inspect(lock)),
      this.masters.bound(),
      (outs) => outs.every(Boolean),
    );
    throwRefusal(outcomes);
    return majorityView(lock.key, this.masters.answeredOrThrow(outcomes), this.masters.quorum);
  }

  /**
   * Listens on every master; a wake-up from any of them wakes the listener. Live once live on a majority: a release
   * that counts reached a majority and published on each master of it, and any two majorities share a master.
   */
  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    const subs = this.masters.list.map((m) => m.store.listen(lock, onWakeUp));
    const q = this.masters.quorum;
    const liveNow = subs.filter((s) => s.live).length;
    const ready =
      liveNow >= q
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            let live = liveNow;
            const failures: { master: string; index: number; error: unknown }[] = [];
            subs.forEach((s, index) => {
              if (s.live) return;
              s.ready.then(
                () => {
                  if (++live === q) resolve();
                },
                (error: unknown) => {
                  failures.push({ master: this.masters.list[index].label, index, error });
                  if (failures.length === subs.length - q + 1)
                    reject(new QuorumFailure(failures, subs.length - failures.length, q));
                },
              );
            });
          });
    ready.catch(() => undefined);
    return { live: liveNow >= q, ready, stop: () => subs.forEach((s) => s.stop()) };
  }

  isListening(lock: LockRef): boolean {
    return this.masters.list.filter((m) => m.store.isListening(lock)).length >= this.masters.quorum;
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    return describeQuorumFailure(this.masters, failure, operation, key, timeoutMs);
  }

  /**
   * Pings every master; a connection kind is up when it answered on a majority. `error` names the masters that failed.
   */
  /** What any master lacks of what the configuration needs, or `undefined` (see `RedisLockStore.checkServer`). */
  async checkServer(): Promise<LockConfigError | undefined> {
    for (const m of this.masters.list) {
      const missing = await m.store.checkServer();
      if (missing) return missing;
    }
    return undefined;
  }

  async ping(timeoutMs: number): Promise<StorePing> {
    return majorityPing(this.masters, await Promise.all(this.masters.list.map((m) => m.store.ping(timeoutMs))));
  }

  async close(): Promise<void> {
    // Undos in flight get one command timeout to finish (the leases free what they could not).
    await this.undo.settle(this.options.commandTimeoutMs);
    await this.masters.close();
  }
}
