import { performance } from 'node:perf_hooks';
import { Cluster, Redis } from 'ioredis';
import { LockConfigError } from '../errors/lock-config.error.js';
import { LockError } from '../errors/lock.error.js';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { LockOperation, LockUnavailableReason } from '../errors/lock-unavailable.error.js';
import type { LockHolderInfo, LockInfo, LockMode } from '../types/lock.types.js';
import type { RedisClient, RedisConnectionInput } from './connection.js';
import type {
  AcquireCall,
  AcquireReply,
  BlockedBy,
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
} from './lock-store.js';
import { TIMED_OUT } from './redis-failures.js';
import { grantedReplyOf } from './replica-wait.js';
import { RedisLockStore } from './redis-lock-store.js';

/** Clock drift allowance of a grant: `leaseMs × DRIFT_FACTOR + DRIFT_MS` (the Redlock figures). */
export const DRIFT_FACTOR = 0.01;
export const DRIFT_MS = 2;
/** A per-master call gives up after this share of `commandTimeoutMs`, so the quorum decides before the engine's bound. */
const MASTER_BOUND_FACTOR = 0.9;
/** The least time the masters still unanswered get once a majority granted, in milliseconds. */
const GRACE_MS = 5;
/** The longest random pause after a split vote, in milliseconds. */
const SPLIT_PAUSE_MS = 50;
/** What a split-vote pause leaves of the command bound, in milliseconds. */
const SPLIT_PAUSE_MARGIN_MS = 20;
/** Delay between two attempts of an undo on a master that did not answer, in milliseconds. */
const UNDO_RETRY_MS = 250;

/** What one master's call gave: its answer, or its failure (`TIMED_OUT` when it did not answer in time). */
type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** A call that fewer than a majority of the masters answered. `describeFailure` turns it into a `LockUnavailableError`. */
export class QuorumFailure extends Error {
  constructor(
    /** Each master that failed: its label (`host:port`) and the error (or `TIMED_OUT`). */
    readonly failures: readonly { readonly master: string; readonly index: number; readonly error: unknown }[],
    readonly answered: number,
    readonly needed: number,
  ) {
    super(`quorum not reached: ${answered} master(s) answered, ${needed} needed`);
    this.name = 'QuorumFailure';
  }
}

/** One independent master: its store and what the delayed-restart rule knows about it. */
interface Master {
  readonly index: number;
  readonly label: string;
  readonly store: RedisLockStore;
  /**
   * When the master (re)started, performance.now() scale, learned from `INFO server` (`uptime_in_seconds`) on each
   * 'ready'; `undefined` while unknown (connection down, INFO not answered yet).
   */
  startedAt: number | undefined;
  /** How long the master must have been up before it counts towards a quorum, in milliseconds (see `eligible`). */
  requiredUptimeMs: number;
  runId: string | undefined;
  /** Bumped when the command connection closes: an `INFO` answer from before that says nothing of the master now. */
  epoch: number;
  /** The listeners `watchRestarts` put on the command connection (removed by `close`). */
  readonly listeners: { event: 'close' | 'ready'; listener: () => void }[];
  /** Per lock and token: the tail of the commands sent to this master, so they reach it in order (see `inLane`). */
  readonly lanes: Map<string, Promise<void>>;
  /**
   * Its last call failed for want of an answer (timed out, connection down) and no answer came since: a call whose
   * other masters can decide it does not wait for this one (see `gather`).
   */
  suspect: boolean;
}

/**
 * Quorum over independent masters (DESIGN §6): one `RedisLockStore` per master, the same scripts on each, and a call
 * counts when a majority (`⌊n/2⌋ + 1`) of the masters agrees.
 *
 * - acquire: sent to every master at once; granted when a majority granted within the validity
 *   `leaseMs − elapsed − (leaseMs × 0.01 + 2 ms)` (elapsed from sending to the majority's answers), fencing token the
 *   largest among the grants. Otherwise every grant is undone, on the masters that granted and, once their outcome
 *   is known, on those that did not answer.
 * - Undo of a grant on one master releases one level with `call.undoSeq`, the operation number the engine reserved
 *   right after `call.seq`: it orders after the acquire (so the scripts apply it, whereas a release with `seq`
 *   itself would be taken for one already applied) and before any later command of the owner, and it takes away
 *   exactly the level this attempt added: a re-entry's undo leaves the outer hold alone (a release of every level
 *   would drop it). The commands of one token on one lock go to each master one after the other (`inLane`), so an
 *   undo waiting for a master's answer is never overtaken by the owner's next attempt there.
 * - Every per-master call is bounded (`0.9 × commandTimeoutMs`): a master that is down or paused counts as not
 *   granting; the call is decided as soon as the majority's answers decide it.
 * - Delayed restart (the Redlock rule): a master whose connection dropped must, once back, have been up for longer
 *   than the longest lease this engine had used by then before it counts towards a quorum: a master that restarted
 *   empty forgot the holds it had, and one of them may be held on a bare majority that includes it.
 */
export class QuorumLockStore implements LockStore {
  private readonly masters: Master[] = [];
  private readonly quorum: number;
  /** The longest lease (acquire, renew, extend) this store has sent, in milliseconds. */
  private longestLeaseMs = 0;
  private closed = false;
  /** Undos and clean-ups running in the background (`close` lets them finish, within a bound). */
  private readonly tasks = new Set<Promise<void>>();
  /**
   * Attempts (lock, token, seq) this store answered with no grant, or failed, and undid itself: the engine re-sends
   * such an attempt to learn its outcome, and is told again that it was not granted instead of it being applied anew.
   * Forgotten after the attempt's lease.
   */
  private readonly undone = new Set<string>();
  /**
   * Per registered waiter id: the lane of its attempts (lock and token), so that its withdrawal reaches each master
   * after every attempt still queued for it there, and no attempt registers it again after it gave up.
   */
  private readonly waiterLanes = new Map<string, string>();
  /** The decision checks of the calls under way (`gather`), run again when a master becomes suspect. */
  private readonly pending = new Set<() => void>();

  constructor(
    inputs: readonly RedisConnectionInput[],
    private readonly options: LockStoreContext,
  ) {
    const labels = validateQuorumInputs(inputs);
    this.quorum = Math.floor(inputs.length / 2) + 1;
    try {
      inputs.forEach((input, index) => {
        const store = new RedisLockStore(input, options);
        const master: Master = {
          index,
          label: labels[index],
          store,
          startedAt: undefined,
          requiredUptimeMs: 0,
          runId: undefined,
          epoch: 0,
          listeners: [],
          lanes: new Map(),
          suspect: false,
        };
        this.masters.push(master);
        this.watchRestarts(master);
      });
    } catch (err) {
      void this.close();
      throw err;
    }
  }

  /** @internal The command connection of each master (a key scan reads them all). */
  get commandConnections(): readonly RedisClient[] {
    return this.masters.map((m) => m.store.commandConnection);
  }

  lock(key: string): LockRef {
    // Every master's store names a lock's keys the same way (same prefix): one ref serves them all.
    return this.masters[0].store.lock(key);
  }

  async acquire(engineCall: AcquireCall): Promise<AcquireReply> {
    // The masters keep the lease plus the drift allowance: the engine counts the hold valid for `leaseMs` from
    // before it sent the attempt, so a master whose clock runs up to that much fast still has the hold then.
    const call: AcquireCall = { ...engineCall, leaseMs: withDrift(engineCall.leaseMs) };
    this.useLease(call.leaseMs);
    const n = this.masters.length;
    const q = this.quorum;
    const lane = laneOf(call.lock, call.token);
    const attempt = `${lane}\u0000${call.seq}`;
    if (this.undone.has(attempt)) return { granted: false, retryInMs: 0, blockedBy: 'writer' };
    if (call.waiterId !== '') this.waiterLanes.set(call.waiterId, lane);
    const sentAt = performance.now();
    const raws = this.masters.map((m) => this.inLane(m, lane, () => m.store.acquire(call)));
    for (const r of raws) r.catch(() => undefined);
    const grantedBy = (o: Outcome<AcquireReply> | undefined, i: number) => o?.ok === true && o.value.granted && this.eligible(this.masters[i]);
    // Once a majority granted, the other masters get as long again as the majority took (at least GRACE_MS) to
    // answer as well: when they do, the fencing token is the largest of every grant, as `inspect` reports it.
    let graceUntil: number | undefined;
    let majorityAt: number | undefined;
    const outcomes = await this.gather(raws, this.masterBound(), (outs, timedOut) => {
      const settled = outs.filter(Boolean).length;
      const answered = outs.filter((o) => o?.ok).length;
      const grants = outs.filter(grantedBy).length;
      if (settled === n || (answered >= q && grants + (n - settled) < q)) return true;
      if (grants < q) return false;
      majorityAt ??= performance.now();
      graceUntil ??= majorityAt + Math.max(GRACE_MS, majorityAt - sentAt);
      return timedOut(graceUntil);
    });
    // Elapsed from sending to the majority's answers (the grace above does not count against the grant).
    const elapsed = (majorityAt ?? performance.now()) - sentAt;
    const validity = engineCall.leaseMs - elapsed - driftOf(engineCall.leaseMs);
    const grants = outcomes.filter(grantedBy);
    const granted = grants.length >= q && (call.reentry || validity > 0);
    if (granted) {
      this.waiterLanes.delete(call.waiterId);
      const replies = grants.map((o) => (o as { value: AcquireReply & { granted: true } }).value);
      // Waiter registrations left on masters that did not grant are withdrawn there once they answer.
      if (call.waiterId !== '') {
        outcomes.forEach((o, i) => {
          if (o?.ok && o.value.granted) return;
          const m = this.masters[i];
          this.background(m, lane, async () => {
            const reply = await raws[i].catch(() => undefined);
            if (reply && !reply.granted) await within(m.store.cancelWait(call.lock, call.mode, call.waiterId), this.masterBound());
          });
        });
      }
      return {
        granted: true,
        fencingToken: Math.max(...replies.map((r) => r.fencingToken)),
        reentered: replies.filter((r) => r.reentered).length >= q,
      };
    }
    // Not granted: undo this attempt on every master that granted it, or may yet (and remember it as undone, so
    // that a re-send of it is not applied anew). A plain refusal everywhere leaves nothing to undo or remember.
    // A master still awaited that turns out to have granted is remembered then (`undoOn`).
    const remember = () => this.forgetAttemptLater(attempt, call.leaseMs);
    if (outcomes.some((o) => o !== undefined && (!o.ok || o.value.granted))) remember();
    outcomes.forEach((o, i) => {
      if (o?.ok && !o.value.granted) return;
      this.undoOn(this.masters[i], lane, call, raws[i], remember);
    });
    const answered = outcomes.filter((o) => o?.ok).length;
    if (answered < q) throw this.failureOf(outcomes, answered);
    const reply = this.notGranted(outcomes, grants.length, elapsed);
    // A re-entry that a majority no longer holds: the engine declares the hold lost; what a minority still has of
    // it is freed (after the undo above, on each master's lane).
    if (call.reentry && reply.blockedBy === 'not-held') this.freeRemnants(call.lock, call.token, outcomes.map((o) => !o?.ok || o.value.granted));
    // A split vote (some masters granted, not a majority): two waiting contenders that split the masters would
    // otherwise retry in lockstep and split them again. A short random pause (of the order of the attempt, at most
    // SPLIT_PAUSE_MS) breaks the tie. A `tryAcquire` (no waiter) does not retry: no pause.
    // The pause stays within the call's command bound (the engine counts the whole call against it).
    if (grants.length > 0 && call.waiterId !== '') {
      const room = this.options.commandTimeoutMs - (performance.now() - sentAt) - SPLIT_PAUSE_MARGIN_MS;
      const pause = Math.random() * Math.min(elapsed * 2 + 5, SPLIT_PAUSE_MS, Math.max(0, room));
      if (pause > 0) await sleep(pause);
    }
    return reply;
  }

  async release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs = 0): Promise<ReleaseReply> {
    const lane = laneOf(lock, token);
    const calls = this.masters.map((m) => this.inLane(m, lane, () => m.store.release(lock, token, seq, holdAtLeastMs)));
    // The call is decided by a majority; the slower masters' releases go on, and `close` lets them finish.
    for (const call of calls) this.track(call.then(noop, noop));
    const outcomes = await this.gather(
      calls,
      this.masterBound(),
      (outs) => outs.every(Boolean) || (['ended', 'level', 'not-held'] as const).some((r) => countOf(outs, r) >= this.quorum),
    );
    const answered = this.answeredOrThrow(outcomes);
    for (const r of ['ended', 'level', 'not-held'] as const) if (countOf(answered, r) >= this.quorum) return r;
    // No majority agrees: a level goes on somewhere, or the hold ended where it still was.
    if (answered.includes('level')) return 'level';
    return answered.includes('ended') ? 'ended' : 'not-held';
  }

  async renew(engineHolds: readonly RenewCall[]): Promise<boolean[]> {
    const holds = engineHolds.map((h) => ({ ...h, leaseMs: withDrift(h.leaseMs) }));
    for (const h of holds) this.useLease(h.leaseMs);
    const n = this.masters.length;
    const q = this.quorum;
    const outcomes = await this.gather(
      this.masters.map((m) => m.store.renew(holds)),
      this.masterBound(),
      (outs) => {
        const settled = outs.filter(Boolean).length;
        return holds.every((_, j) => {
          const yes = outs.filter((o) => o?.ok && o.value[j]).length;
          return yes >= q || yes + (n - settled) < q;
        });
      },
    );
    const answered = this.answeredOrThrow(outcomes);
    return holds.map((hold, j) => {
      if (answered.filter((r) => r[j]).length >= q) return true;
      // Lost on a majority: the engine tells the holder; what a minority still has of it is freed.
      this.freeRemnants(hold.lock, hold.token, outcomes.map((o) => !o?.ok || o.value[j]));
      return false;
    });
  }

  async extend(lock: LockRef, token: string, engineMs: number): Promise<boolean> {
    const ms = withDrift(engineMs);
    this.useLease(ms);
    const n = this.masters.length;
    const outcomes = await this.gather(
      this.masters.map((m) => m.store.extend(lock, token, ms)),
      this.masterBound(),
      (outs) => {
        const yes = countOf(outs, true);
        return yes >= this.quorum || yes + (n - outs.filter(Boolean).length) < this.quorum;
      },
    );
    if (this.answeredOrThrow(outcomes).filter(Boolean).length >= this.quorum) return true;
    this.freeRemnants(lock, token, outcomes.map((o) => !o?.ok || o.value));
    return false;
  }

  /**
   * Withdraws the waiter on every master, each after the attempts of it still queued for that master (its lane): an
   * attempt that reaches a slow master later would register it again. A withdrawal still running when the call
   * returns (a master slow or down) goes on in the background; `close` lets it finish (bounded).
   */
  async cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    const lane = this.waiterLanes.get(waiterId);
    this.waiterLanes.delete(waiterId);
    const calls = this.masters.map((m) => {
      const cancel = () => m.store.cancelWait(lock, mode, waiterId);
      const call = lane === undefined ? cancel() : this.inLane(m, lane, cancel);
      // Failures reach the caller through the outcomes below, not the connection-error report.
      this.track(call.then(noop, noop));
      return call;
    });
    const outcomes = await this.gather(calls, this.masterBound(), (outs) => outs.every(Boolean));
    this.answeredOrThrow(outcomes);
  }

  /**
   * The waiters' heartbeat on every master. A waiter attempts again as soon as any master that answered says so (it
   * may get in there, or its registration is gone there): the attempt re-registers it on every master. Masters that
   * do not answer in time are left out; with fewer than a majority answering the call fails (the waiters keep their
   * own retry timers).
   */
  async keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    const outcomes = await this.gather(
      this.masters.map((m) => m.store.keepWaiting(waits)),
      this.masterBound(),
      (outs) => outs.every(Boolean),
    );
    const answered = this.answeredOrThrow(outcomes);
    return waits.map((_, i) => (answered.some((r) => r[i] === 'attempt') ? 'attempt' : 'waiting'));
  }

  /** Frees the lock on every master; `true` if any master had it held. */
  async forceRelease(lock: LockRef): Promise<boolean> {
    const outcomes = await this.gather(
      this.masters.map((m) => m.store.forceRelease(lock)),
      this.masterBound(),
      (outs) => outs.every(Boolean),
    );
    return this.answeredOrThrow(outcomes).some(Boolean);
  }

  /**
   * The majority's view: the holders that a majority of all the masters have (matched by mode, owner and
   * identity), each with the hold count and the lease remaining that a majority has (the `q`-th largest), the
   * largest fencing token any master has, and the most waiters any master counts. `null` when no holder is on a
   * majority. Waits for every master's answer (each bounded).
   */
  async inspect(lock: LockRef): Promise<LockInfo | null> {
    const outcomes = await this.gather(
      this.masters.map((m) => m.store.inspect(lock)),
      this.masterBound(),
      (outs) => outs.every(Boolean),
    );
    const views = this.answeredOrThrow(outcomes);
    const byHolder = new Map<string, LockHolderInfo[]>();
    for (const view of views) {
      for (const h of view?.holders ?? []) {
        const id = [h.mode, h.owner, h.host, h.pid, h.app].join('|');
        byHolder.set(id, [...(byHolder.get(id) ?? []), h]);
      }
    }
    const holders: LockHolderInfo[] = [];
    for (const seen of byHolder.values()) {
      if (seen.length < this.quorum) continue;
      const leases = seen.map((h) => h.remainingLeaseMs).sort((a, b) => b - a);
      holders.push({
        ...seen[0],
        holdCount: seen.map((h) => h.holdCount).sort((a, b) => b - a)[this.quorum - 1],
        since: new Date(Math.min(...seen.map((h) => h.since.getTime()))),
        // The masters keep the drift allowance on top of the lease (`withDrift`): reported without it.
        remainingLeaseMs: withoutDrift(leases[this.quorum - 1]),
        fencingToken: Math.max(...seen.map((h) => h.fencingToken)),
      });
    }
    if (holders.length === 0) return null;
    const present = views.filter((v): v is LockInfo => v !== null);
    const waitingWriters = Math.max(...present.map((v) => v.waitingWriters));
    const waitingReaders = Math.max(...present.map((v) => v.waitingReaders));
    return {
      key: lock.key,
      mode: holders.some((h) => h.mode === 'write') ? 'write' : 'read',
      holders,
      waiting: waitingWriters + waitingReaders,
      waitingWriters,
      waitingReaders,
      fencingToken: Math.max(...present.map((v) => v.fencingToken)),
    };
  }

  /**
   * Listens on every master; a wake-up from any of them wakes the listener. Live once live on a majority: a release
   * that counts reached a majority and published on each master of it, and any two majorities share a master.
   */
  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    const subs = this.masters.map((m) => m.store.listen(lock, onWakeUp));
    const q = this.quorum;
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
                  failures.push({ master: this.masters[index].label, index, error });
                  if (failures.length === subs.length - q + 1) reject(new QuorumFailure(failures, subs.length - failures.length, q));
                },
              );
            });
          });
    ready.catch(() => undefined);
    return { live: liveNow >= q, ready, stop: () => subs.forEach((s) => s.stop()) };
  }

  isListening(lock: LockRef): boolean {
    return this.masters.filter((m) => m.store.isListening(lock)).length >= this.quorum;
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    if (failure instanceof LockError) return failure;
    const n = this.masters.length;
    if (failure instanceof QuorumFailure) {
      const described = failure.failures.map((f) => ({
        master: f.master,
        error: this.masters[f.index].store.describeFailure(f.error, operation, key, timeoutMs),
      }));
      const first = described.find((d) => d.error instanceof LockUnavailableError && d.error.reason === 'permission-denied') ?? described[0];
      const reason: LockUnavailableReason = first?.error instanceof LockUnavailableError ? first.error.reason : 'unreachable';
      const each = described.map((d) => `master ${d.master}: ${innerDetail(d.error)}`).join('; ');
      return new LockUnavailableError({
        key,
        operation,
        reason,
        detail: `quorum not reached: ${failure.answered} of ${n} masters answered, ${failure.needed} needed (${each})`,
        missing: first?.error instanceof LockUnavailableError ? first.error.missing : undefined,
        cause: failure,
      });
    }
    if (failure === TIMED_OUT) {
      const down = this.masters.filter((m) => m.store.commandConnection.status !== 'ready').map((m) => m.label);
      const reason: LockUnavailableReason = n - down.length < this.quorum ? 'unreachable' : 'timeout';
      const which = down.length > 0 ? `; not connected: ${down.join(', ')}` : '';
      return new LockUnavailableError({
        key,
        operation,
        reason,
        detail: `no answer from a majority of the ${n} masters within commandTimeoutMs (${timeoutMs} ms)${which}`,
      });
    }
    return this.masters[0].store.describeFailure(failure, operation, key, timeoutMs);
  }

  /** Pings every master; a connection kind is up when it answered on a majority. `error` names the masters that failed. */
  async ping(timeoutMs: number): Promise<StorePing> {
    const pings = await Promise.all(this.masters.map((m) => m.store.ping(timeoutMs)));
    const failed = pings.flatMap((p, i) => (p.error ? [`master ${this.masters[i].label}: ${p.error}`] : []));
    const commands = pings.filter((p) => p.command);
    const subscribers = pings.filter((p) => p.subscriber);
    return {
      command: commands.length >= this.quorum,
      subscriber: subscribers.length >= this.quorum,
      commandMs: Math.max(0, ...commands.map((p) => p.commandMs)),
      subscriberMs: Math.max(0, ...subscribers.map((p) => p.subscriberMs)),
      ...(failed.length > 0 ? { error: failed.join('; ') } : {}),
    };
  }

  async close(): Promise<void> {
    // Undos in flight get one command timeout to finish (the leases free what they could not).
    if (this.tasks.size > 0) await within(Promise.allSettled([...this.tasks]), this.options.commandTimeoutMs);
    this.closed = true;
    for (const m of this.masters) for (const { event, listener } of m.listeners) m.store.commandConnection.off(event, listener);
    await Promise.all(this.masters.map((m) => m.store.close()));
  }

  /** Whether `master` counts towards a quorum now (the delayed-restart rule). */
  private eligible(master: Master, now = performance.now()): boolean {
    if (master.requiredUptimeMs === 0) return true;
    return master.startedAt !== undefined && now - master.startedAt > master.requiredUptimeMs;
  }

  /** How long until `master` counts towards a quorum again, in milliseconds. */
  private quarantineLeftMs(master: Master): number {
    if (this.eligible(master)) return 0;
    if (master.startedAt === undefined) return master.requiredUptimeMs;
    return Math.max(0, master.startedAt + master.requiredUptimeMs - performance.now()) + 1;
  }

  /**
   * The delayed-restart rule. When a master's command connection drops, the master may be restarting and losing
   * every hold it had: it must then have been up for longer than the longest lease used so far before it counts
   * again (by then every lease granted before its restart has run out). Its start time comes from `INFO server`
   * on each 'ready'; a new `run_id` is a restart for sure. Cost: a master that comes back is left out of quorums
   * for up to one lease (with one master back and the others up, nothing changes but the fault tolerance).
   */
  private watchRestarts(master: Master): void {
    const c = master.store.commandConnection;
    const onClose = () => {
      master.suspect = true;
      for (const check of [...this.pending]) check();
      master.epoch++;
      master.startedAt = undefined;
      master.requiredUptimeMs = Math.max(master.requiredUptimeMs, this.longestLeaseMs);
    };
    const onReady = () => void this.learnStart(master);
    c.on('close', onClose);
    c.on('ready', onReady);
    master.listeners.push({ event: 'close', listener: onClose }, { event: 'ready', listener: onReady });
    if (c.status === 'ready') void this.learnStart(master);
  }

  private async learnStart(master: Master): Promise<void> {
    const c = master.store.commandConnection as Redis;
    const epoch = master.epoch;
    const outcome = await within(c.info('server'), this.options.commandTimeoutMs);
    // The connection dropped meanwhile (the master may have restarted since): this answer is stale, or none at all.
    if (this.closed || master.epoch !== epoch || c.status !== 'ready') return;
    const answeredAt = performance.now();
    const info = outcome.ok ? outcome.value : '';
    const uptime = /uptime_in_seconds:(\d+)/.exec(info)?.[1];
    const runId = /run_id:(\w+)/.exec(info)?.[1];
    if (runId !== undefined && master.runId !== undefined && runId !== master.runId) {
      master.requiredUptimeMs = Math.max(master.requiredUptimeMs, this.longestLeaseMs);
    }
    master.runId = runId ?? master.runId;
    // Uptime is whole seconds, rounded down: counting from the answer errs on the young side. Without an answer
    // (INFO refused or too slow), the master is taken as just started.
    master.startedAt = uptime === undefined ? answeredAt : answeredAt - Number(uptime) * 1000;
  }

  private useLease(ms: number): void {
    if (ms > this.longestLeaseMs) this.longestLeaseMs = ms;
  }

  /**
   * How long one master's answer is awaited. Not capped by the lease: an answer that comes after the validity is
   * still an answer (the attempt is then not granted, and undone), not a failure of the master.
   */
  private masterBound(): number {
    return Math.max(1, this.options.commandTimeoutMs * MASTER_BOUND_FACTOR);
  }

  /**
   * Runs `fn` on `master` after the commands already sent there for the same lock and token: the commands of one
   * token reach each master in the order they were issued, even while an undo waits for a master's answer.
   */
  private inLane<T>(master: Master, lane: string, fn: () => Promise<T>): Promise<T> {
    const before = master.lanes.get(lane);
    const run = before ? before.then(fn) : fn();
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    master.lanes.set(lane, settled);
    void settled.then(() => {
      if (master.lanes.get(lane) === settled) master.lanes.delete(lane);
    });
    return run;
  }

  /**
   * Undoes `call` on `master`, whose answer to it (`raw`) was a grant, is still awaited, or failed: once the answer
   * is known, a grant is released by one level with `call.undoSeq`; a failure (the attempt may or may not have
   * landed) is resolved by re-sending the very same attempt (applied once per `seq`) and releasing what it
   * reports. Retried while the master does not answer, for at most the lease (after that nothing is left to undo).
   */
  private undoOn(master: Master, lane: string, call: AcquireCall, raw: Promise<AcquireReply>, granted: () => void): void {
    // Counted from now, not from when the lane is free: undos queued behind others give up within the lease too.
    const giveUpAt = performance.now() + call.leaseMs;
    this.background(master, lane, async () => {
      // A grant the master's store could not stand by (its replicas did not confirm it) is a grant to undo.
      let reply: AcquireReply | undefined = await raw.catch((err: unknown) => grantedReplyOf(err));
      while (!reply && !this.closed && performance.now() < giveUpAt) {
        const o = await within(master.store.acquire(call), this.masterBound());
        if (o.ok) reply = o.value;
        else reply = grantedReplyOf(o.error);
        if (!reply) await sleep(UNDO_RETRY_MS);
      }
      if (!reply?.granted) return;
      granted();
      while (!this.closed && performance.now() < giveUpAt) {
        const o = await within(master.store.release(call.lock, call.token, call.undoSeq), this.masterBound());
        if (o.ok) return;
        await sleep(UNDO_RETRY_MS);
      }
      this.options.onConnectionError(
        new Error(`could not undo a grant of "${call.lock.key}" on master ${master.label}; its lease frees it within ${call.leaseMs} ms`),
      );
    });
  }

  /**
   * Frees every level of `token`'s hold on the masters flagged in `holding` (a hold a majority no longer has): those
   * that said they have it, and those whose answer is not known (still awaited, or failed).
   */
  private freeRemnants(lock: LockRef, token: string, holding: readonly boolean[]): void {
    const lane = laneOf(lock, token);
    holding.forEach((held, i) => {
      if (!held) return;
      const m = this.masters[i];
      this.background(m, lane, async () => {
        await within(m.store.release(lock, token, undefined), this.masterBound());
      });
    });
  }

  /** Runs `work` on `master`'s lane in the background, tracked for `close`; failures are reported, never thrown. */
  private background(master: Master, lane: string, work: () => Promise<void>): void {
    this.track(this.inLane(master, lane, work));
  }

  /** Keeps `work` among the tasks `close` lets finish; its failure is reported, never thrown. */
  private track(work: Promise<void>): void {
    const task = work.catch((err: unknown) => this.options.onConnectionError(err));
    this.tasks.add(task);
    void task.then(() => this.tasks.delete(task));
  }

  private forgetAttemptLater(attempt: string, leaseMs: number): void {
    if (this.undone.has(attempt)) return;
    this.undone.add(attempt);
    setTimeout(() => this.undone.delete(attempt), leaseMs).unref();
  }

  /** The reply of an attempt that a majority answered without granting. */
  private notGranted(outcomes: readonly (Outcome<AcquireReply> | undefined)[], grants: number, elapsedMs: number): Extract<AcquireReply, { granted: false }> {
    // How long until each master that answered can grant: 0 for one that did (once undone), its blocking leases for
    // one that did not, at least its quarantine for one that does not count yet. A majority can grant once the
    // q-th shortest of these has passed.
    const waits: number[] = [];
    const blockers = new Map<BlockedBy, number>();
    outcomes.forEach((o, i) => {
      if (!o?.ok) return;
      const quarantine = this.quarantineLeftMs(this.masters[i]);
      if (o.value.granted) {
        waits.push(quarantine);
        return;
      }
      waits.push(Math.max(o.value.retryInMs, quarantine));
      blockers.set(o.value.blockedBy, (blockers.get(o.value.blockedBy) ?? 0) + 1);
    });
    waits.sort((a, b) => a - b);
    // A majority granted too slowly (past the validity): try again once as long as that attempt took has passed.
    const retryInMs = grants >= this.quorum ? Math.ceil(elapsedMs) : (waits[this.quorum - 1] ?? waits[waits.length - 1] ?? 0);
    let blockedBy: BlockedBy = 'writer';
    let most = 0;
    for (const [by, count] of blockers) {
      if (count > most) {
        blockedBy = by;
        most = count;
      }
    }
    return { granted: false, retryInMs, blockedBy };
  }

  /** The answers, when a majority answered; otherwise a `QuorumFailure` naming the masters that failed. */
  private answeredOrThrow<T>(outcomes: readonly (Outcome<T> | undefined)[]): T[] {
    const answered = outcomes.flatMap((o) => (o?.ok ? [o.value] : []));
    if (answered.length < this.quorum) throw this.failureOf(outcomes, answered.length);
    return answered;
  }

  private failureOf(outcomes: readonly (Outcome<unknown> | undefined)[], answered: number): QuorumFailure {
    const failures = outcomes.flatMap((o, index) =>
      o?.ok ? [] : [{ master: this.masters[index].label, index, error: o ? o.error : TIMED_OUT }],
    );
    return new QuorumFailure(failures, answered, this.quorum);
  }

  /**
   * Each master's outcome (`calls` in master order), each bounded by `boundMs`, as soon as `decided` says the outcomes
   * so far decide the call (or every master settled). Masters still unsettled then are `undefined`.
   *
   * A master that is down (or paused) would make every call whose answers split wait for it until the bound: two
   * contenders that each won one of the two live masters both wait for the third. So a suspect master (its last call
   * got no answer, and none came since) counts as failed at once, as long as the others are a majority: the call is
   * decided by the masters that answer. It is still sent the call, and its first answer clears the suspicion.
   */
  private gather<T>(
    calls: readonly Promise<T>[],
    boundMs: number,
    decided: (outs: readonly (Outcome<T> | undefined)[], wakeAt: (at: number) => boolean) => boolean,
  ): Promise<(Outcome<T> | undefined)[]> {
    const outs: (Outcome<T> | undefined)[] = calls.map(() => undefined);
    const view = () => {
      const suspects = this.masters.filter((m) => m.suspect).length;
      if (suspects === 0 || this.masters.length - suspects < this.quorum) return outs;
      return outs.map((o, i) => o ?? (this.masters[i].suspect ? SUSPECT : undefined));
    };
    return new Promise((resolve) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        if (done) return;
        // `wakeAt(at)`: decided once `at` (performance.now()) has passed; until then, checked again at that time.
        const wakeAt = (at: number) => {
          if (performance.now() >= at) return true;
          if (!timer) timer = setTimeout(() => ((timer = undefined), check()), at - performance.now());
          return false;
        };
        const seen = view();
        if (decided(seen, wakeAt)) {
          done = true;
          clearTimeout(timer);
          this.pending.delete(check);
          resolve([...seen]);
        }
      };
      // A master's connection that closes meanwhile makes it suspect: the call may be decided without it now.
      this.pending.add(check);
      calls.forEach((call, i) => {
        const master = this.masters[i];
        void within(call, boundMs).then((o) => {
          master.suspect = !o.ok && (o.error === TIMED_OUT || master.store.commandConnection.status !== 'ready');
          outs[i] = o;
          check();
        });
      });
      check();
    });
  }
}

function noop(): void {}

/** The outcome a suspect master counts as while it has not answered (see `gather`). */
const SUSPECT: Outcome<never> = Object.freeze({ ok: false, error: TIMED_OUT });

function laneOf(lock: LockRef, token: string): string {
  return `${lock.key}\u0000${token}`;
}

function countOf<T>(outs: readonly (Outcome<T> | T | undefined)[], value: T): number {
  return outs.filter((o) => (isOutcome(o) ? o.ok && o.value === value : o === value)).length;
}

function isOutcome<T>(o: unknown): o is Outcome<T> {
  return typeof o === 'object' && o !== null && 'ok' in o;
}

function innerDetail(err: LockError): string {
  const m = /Redis unavailable \([^)]*\): (.*)$/s.exec(err.message);
  return m ? m[1] : err.message;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `pending`'s outcome, or a failure with `TIMED_OUT` after `ms`. Never rejects. */
/** The drift allowance of a lease: `leaseMs × 0.01 + 2 ms`. */
function driftOf(leaseMs: number): number {
  return leaseMs * DRIFT_FACTOR + DRIFT_MS;
}

/** The lease a master keeps for a lease of `leaseMs` the engine counts on (whole milliseconds). */
function withDrift(leaseMs: number): number {
  return Math.ceil(leaseMs + driftOf(leaseMs));
}

/** The inverse of `withDrift`, for a lease a master reports remaining (never negative). */
function withoutDrift(remainingMs: number): number {
  return Math.max(0, Math.floor((remainingMs - DRIFT_MS) / (1 + DRIFT_FACTOR)));
}

function within<T>(pending: Promise<T>, ms: number): Promise<Outcome<T>> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false, error: TIMED_OUT }), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve({ ok: true, value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ ok: false, error });
      },
    );
  });
}

/**
 * Checks the masters of quorum mode before any connection is opened, and returns a label (`host:port`) for each.
 * @throws {LockConfigError} naming `redis`: fewer than 3, an even count, a Cluster, an invalid entry, or one master
 * given twice.
 */
export function validateQuorumInputs(inputs: readonly unknown[]): string[] {
  const fix = 'pass 3, 5 or 7 independent masters (redis:// URLs, ioredis RedisOptions or Redis clients)';
  if (inputs.length < 3) {
    throw new LockConfigError(
      `invalid redis: quorum mode needs at least 3 masters, got ${inputs.length}; ${fix}, or a single connection input for one Redis`,
      'redis',
    );
  }
  if (inputs.length % 2 === 0) {
    throw new LockConfigError(
      `invalid redis: quorum mode needs an odd number of masters, got ${inputs.length} (an even count tolerates no more failures than one master less); ${fix}`,
      'redis',
    );
  }
  const labels = inputs.map((input, i) => {
    if (input instanceof Cluster) {
      throw new LockConfigError(
        `invalid redis: entry ${i} is an ioredis Cluster; quorum mode takes independent masters, not a Cluster: ${fix}`,
        'redis',
      );
    }
    const label = addressOf(input);
    if (label === undefined) throw new LockConfigError(`invalid redis: entry ${i} is not a redis:// URL, ioredis RedisOptions or Redis client; ${fix}`, 'redis');
    return label;
  });
  labels.forEach((label, i) => {
    const j = labels.indexOf(label);
    if (j !== i) {
      throw new LockConfigError(
        `invalid redis: entries ${j} and ${i} are the same master (${label}); each entry must be a different, independent master: ${fix}`,
        'redis',
      );
    }
  });
  return labels;
}

/** `host:port` (or the socket path, or the Sentinel master name) of a connection input; `undefined` when invalid. */
function addressOf(input: unknown): string | undefined {
  const address = (host: string | undefined, port: number | string | undefined) => {
    const h = host === undefined || host === 'localhost' || host === '' ? '127.0.0.1' : host;
    return `${h}:${port === undefined || port === '' ? 6379 : Number(port)}`;
  };
  if (typeof input === 'string') {
    if (!/^rediss?:\/\//.test(input)) return undefined;
    try {
      const url = new URL(input);
      return address(url.hostname.replace(/^\[|\]$/g, ''), url.port);
    } catch {
      return undefined;
    }
  }
  const options = input instanceof Redis ? input.options : input;
  if (typeof options !== 'object' || options === null) return undefined;
  const o = options as { host?: string; port?: number; path?: string; name?: string; sentinels?: unknown };
  if (o.path) return o.path;
  if (o.sentinels) return `sentinel master ${o.name ?? ''}`;
  return address(o.host, o.port);
}
