import { performance } from 'node:perf_hooks';
import type { RedisConnectionInput } from '../connection.js';
import type { LockRef, LockStoreContext } from '../../store/lock-store.js';
import { QuorumFailure, SUSPECT, within } from './quorum-outcomes.js';
import type { Outcome } from './quorum-outcomes.js';
import { validateQuorumInputs } from './quorum-inputs.js';
import { TIMED_OUT } from '../../store/timed-out.js';
import { RedisLockStore } from '../redis-lock-store.js';

/**
 * A per-master call gives up after this share of `commandTimeoutMs`, so the quorum decides before the engine's bound.
 */
const MASTER_BOUND_FACTOR = 0.9;

/** One independent master: its store and what the delayed-restart rule knows about it. */
export interface Master {
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
  /** What removes the listener `watchRestarts` put on the command connection (called by `close`). */
  readonly listeners: (() => void)[];
  /** Per lock and token: the tail of the commands sent to this master, so they reach it in order (see `inLane`). */
  readonly lanes: Map<string, Promise<void>>;
  /**
   * Its last call failed for want of an answer (timed out, connection down) and no answer came since: a call whose
   * other masters can decide it does not wait for this one (see `gather`).
   */
  suspect: boolean;
}

/** The lane of `token`'s commands on `lock`: they reach each master one after the other. */
export function laneOf(lock: LockRef, token: string): string {
  return `${lock.key}\u0000${token}`;
}

/**
 * The masters of quorum mode: one `RedisLockStore` each, the majority they make, the per-master bound, the lanes
 * that keep one token's commands in order on each master, and the delayed-restart rule (the Redlock rule): a master
 * whose connection dropped must, once back, have been up for longer than the longest lease this engine had used by
 * then before it counts towards a quorum: a master that restarted empty forgot the holds it had, and one of them may
 * be held on a bare majority that includes it.
 */
export class QuorumMasters {
  readonly list: Master[] = [];
  /** `⌊n/2⌋ + 1`. */
  readonly quorum: number;
  /** Set by `close`: background work and start-time probes stop. */
  closed = false;
  /**
   * Per registered waiter id: the lane of its attempts (lock and token), so that its withdrawal reaches each master
   * after every attempt still queued for it there, and no attempt registers it again after it gave up.
   */
  readonly waiterLanes = new Map<string, string>();
  /** The longest lease (acquire, renew, extend) sent to the masters, in milliseconds. */
  private longestLeaseMs = 0;
  /** The decision checks of the calls under way (`gather`), run again when a master becomes suspect. */
  private readonly pending = new Set<() => void>();

  /** @throws {LockConfigError} naming `redis` for invalid inputs (see `validateQuorumInputs`). */
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
        this.list.push(master);
        this.watchRestarts(master);
      });
    } catch (err) {
      void this.close();
      throw err;
    }
  }

  get size(): number {
    return this.list.length;
  }

  /** Notes a lease sent to the masters (the delayed-restart rule waits out the longest). */
  useLease(ms: number): void {
    if (ms > this.longestLeaseMs) this.longestLeaseMs = ms;
  }

  /**
   * How long one master's answer is awaited. Not capped by the lease: an answer that comes after the validity is
   * still an answer (the attempt is then not granted, and undone), not a failure of the master.
   */
  bound(): number {
    return Math.max(1, this.options.commandTimeoutMs * MASTER_BOUND_FACTOR);
  }

  /**
   * Runs `fn` on `master` after the commands already sent there for the same lock and token: the commands of one
   * token reach each master in the order they were issued, even while an undo waits for a master's answer.
   */
  inLane<T>(master: Master, lane: string, fn: () => Promise<T>): Promise<T> {
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

  /** The answers, when a majority answered; otherwise a `QuorumFailure` naming the masters that failed. */
  answeredOrThrow<T>(outcomes: readonly (Outcome<T> | undefined)[]): T[] {
    const answered = outcomes.flatMap((o) => (o?.ok ? [o.value] : []));
    if (answered.length < this.quorum) throw this.failureOf(outcomes, answered.length);
    return answered;
  }

  failureOf(outcomes: readonly (Outcome<unknown> | undefined)[], answered: number): QuorumFailure {
    const failures = outcomes.flatMap((o, index) =>
      o?.ok ? [] : [{ master: this.list[index].label, index, error: o ? o.error : TIMED_OUT }],
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
  gather<T>(
    calls: readonly Promise<T>[],
    boundMs: number,
    decided: (outs: readonly (Outcome<T> | undefined)[], wakeAt: (at: number) => boolean) => boolean,
  ): Promise<(Outcome<T> | undefined)[]> {
    const outs: (Outcome<T> | undefined)[] = calls.map(() => undefined);
    const view = () => {
      const suspects = this.list.filter((m) => m.suspect).length;
      if (suspects === 0 || this.list.length - suspects < this.quorum) return outs;
      return outs.map((o, i) => o ?? (this.list[i].suspect ? SUSPECT : undefined));
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
        const master = this.list[i];
        void within(call, boundMs).then((o) => {
          master.suspect = !o.ok && (o.error === TIMED_OUT || !master.store.commandConnection.connected);
          outs[i] = o;
          check();
        });
      });
      check();
    });
  }

  /** Whether `master` counts towards a quorum now (the delayed-restart rule). */
  eligible(master: Master, now = performance.now()): boolean {
    if (master.requiredUptimeMs === 0) return true;
    return master.startedAt !== undefined && now - master.startedAt > master.requiredUptimeMs;
  }

  /** How long until `master` counts towards a quorum again, in milliseconds. */
  quarantineLeftMs(master: Master): number {
    if (this.eligible(master)) return 0;
    if (master.startedAt === undefined) return master.requiredUptimeMs;
    return Math.max(0, master.startedAt + master.requiredUptimeMs - performance.now()) + 1;
  }

  /** Stops watching restarts and closes every master's store. */
  async close(): Promise<void> {
    this.closed = true;
    for (const m of this.list) for (const stop of m.listeners) stop();
    await Promise.all(this.list.map((m) => m.store.close()));
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
    master.listeners.push(c.onConnection((e) => (e.state === 'down' ? onClose() : onReady()), { errors: false }));
    if (c.connected) void this.learnStart(master);
  }

  private async learnStart(master: Master): Promise<void> {
    const c = master.store.commandConnection;
    const epoch = master.epoch;
    const outcome = await within(c.send(['INFO', 'server']) as Promise<string>, this.options.commandTimeoutMs);
    // The connection dropped meanwhile (the master may have restarted since): this answer is stale, or none at all.
    if (this.closed || master.epoch !== epoch || !c.connected) return;
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
}
