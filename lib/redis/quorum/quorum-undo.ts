import { performance } from 'node:perf_hooks';
import type { AcquireCall, AcquireReply, LockRef, LockStoreContext } from '../../store/lock-store.js';
import { laneOf } from './quorum-masters.js';
import type { Master, QuorumMasters } from './quorum-masters.js';
import { sleep, within } from './quorum-outcomes.js';
import { grantedReplyOf } from '../replica-wait.js';

/** Delay between two attempts of an undo on a master that did not answer, in milliseconds. */
const UNDO_RETRY_MS = 250;

/**
 * What quorum mode undoes after a partition, in the background on the masters' lanes: the grants of an attempt
 * that did not win a majority (`undoOn`), the remnants of a hold a majority no longer has (`freeRemnants`), and the
 * attempts it undid itself, so that a re-sent one is not applied anew (`remember` / `wasUndone`).
 */
export class QuorumUndo {
  /**
   * Undos, clean-ups, and releases and withdrawals a majority already decided, running in the background (`settle`
   * lets them finish, within a bound).
   */
  private readonly tasks = new Set<Promise<void>>();
  /**
   * Attempts (lock, token, seq) this store answered with no grant, or failed, and undid itself: the engine re-sends
   * such an attempt to learn its outcome, and is told again that it was not granted instead of it being applied anew.
   * Forgotten after the attempt's lease.
   */
  private readonly undone = new Set<string>();

  constructor(
    private readonly masters: QuorumMasters,
    private readonly options: LockStoreContext,
  ) {}

  /** Whether this store undid `attempt` itself (within the attempt's lease). */
  wasUndone(attempt: string): boolean {
    return this.undone.has(attempt);
  }

  /** Remembers `attempt` as undone for `leaseMs`. */
  remember(attempt: string, leaseMs: number): void {
    if (this.undone.has(attempt)) return;
    this.undone.add(attempt);
    setTimeout(() => this.undone.delete(attempt), leaseMs).unref();
  }

  /**
   * Undoes `call` on `master`, whose answer to it (`raw`) was a grant, is still awaited, or failed: once the answer
   * is known, a grant is released by one level with `call.undoSeq`; a failure (the attempt may or may not have
   * landed) is resolved by re-sending the very same attempt (applied once per `seq`) and releasing what it
   * reports. Retried while the master does not answer, for at most the lease (after that nothing is left to undo).
   */
  undoOn(master: Master, lane: string, call: AcquireCall, raw: Promise<AcquireReply>, granted: () => void): void {
    // Counted from now, not from when the lane is free: undos queued behind others give up within the lease too.
    const giveUpAt = performance.now() + call.leaseMs;
    this.background(master, lane, async () => {
      // A grant the master's store could not stand by (its replicas did not confirm it) is a grant to undo.
      let reply: AcquireReply | undefined = await raw.catch((err: unknown) => grantedReplyOf(err));
      while (!reply && !this.masters.closed && performance.now() < giveUpAt) {
        const o = await within(master.store.acquire(call), this.masters.bound());
        if (o.ok) reply = o.value;
        else reply = grantedReplyOf(o.error);
        if (!reply) await sleep(UNDO_RETRY_MS);
      }
      if (!reply?.granted) return;
      granted();
      while (!this.masters.closed && performance.now() < giveUpAt) {
        const o = await within(master.store.release(call.lock, call.token, call.undoSeq), this.masters.bound());
        if (o.ok) return;
        await sleep(UNDO_RETRY_MS);
      }
      this.options.onConnectionError(
        new Error(
          `could not undo a grant of "${call.lock.key}" on master ${master.label}; its lease frees it within ${call.leaseMs} ms`,
        ),
      );
    });
  }

  /**
   * Frees every level of `token`'s hold on the masters flagged in `holding` (a hold a majority no longer has): those
   * that said they have it, and those whose answer is not known (still awaited, or failed).
   */
  freeRemnants(lock: LockRef, token: string, holding: readonly boolean[]): void {
    const lane = laneOf(lock, token);
    holding.forEach((held, i) => {
      if (!held) return;
      const m = this.masters.list[i];
      this.background(m, lane, async () => {
        await within(m.store.release(lock, token, undefined), this.masters.bound());
      });
    });
  }

  /** Runs `work` on `master`'s lane in the background, tracked for `settle`; failures are reported, never thrown. */
  background(master: Master, lane: string, work: () => Promise<void>): void {
    this.track(this.masters.inLane(master, lane, work));
  }

  /** Keeps `work` among the tasks `settle` lets finish; its failure is reported, never thrown. */
  track(work: Promise<void>): void {
    const task = work.catch((err: unknown) => this.options.onConnectionError(err));
    this.tasks.add(task);
    void task.then(() => this.tasks.delete(task));
  }

  /** Lets the work in flight finish, for at most `ms` (the leases free what it could not). */
  async settle(ms: number): Promise<void> {
    if (this.tasks.size > 0) await within(Promise.allSettled([...this.tasks]), ms);
  }
}
