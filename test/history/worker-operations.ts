// One loop of a history worker: pick an operation, acquire, hold while sampling (with fenced writes under exclusive
// locks and leadership), release; log every step. Also the leadership campaigns. Failures are logged, never thrown.
import type { Redis } from 'ioredis';
import type { LockEngine, LockHandle, PermitHandle } from '../../lib/index.js';
import type { HistoryLog, HoldKind } from './history-events.js';
import { now } from './history-events.js';
import type { Observer } from './worker-observer.js';
import { reasonName } from './worker-observer.js';
import type { SeededRandom } from './seeded-random.js';
import type { OperationKind, WorkerTask } from './worker-task.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The fenced store: a write is accepted when its fencing token is greater than the stored one, or equal and from the
 * same holder; an accepted write is appended to the key's list, which the checker reads after the run.
 * KEYS[1] the store's hash (fence, holder), KEYS[2] its list; ARGV[1] fence, ARGV[2] holder, ARGV[3] write id.
 * Returns 1 accepted, 0 refused.
 */
export const FENCED_WRITE = `
local cur = redis.call('HMGET', KEYS[1], 'fence', 'holder')
local f = tonumber(ARGV[1])
local c = tonumber(cur[1] or '0')
if f < c or (f == c and cur[2] ~= ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'holder', ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[3] .. '|' .. ARGV[1] .. '|' .. ARGV[2])
return 1`;

/** The fenced store's keys for lock key `key` (a prefix of their own, beside the library's). */
export function storeKeys(prefix: string, key: string): [string, string] {
  return [`${prefix}fenced:${key}`, `${prefix}fenced:${key}:log`];
}

/** What a worker's operations share. */
export interface WorkerParts {
  readonly task: WorkerTask;
  readonly engine: LockEngine;
  readonly store: Redis;
  readonly log: HistoryLog;
  readonly observer: Observer;
  /** Set once the worker stops starting operations (stop); holds then end as usual. */
  readonly stopping: () => boolean;
  /** Set once the engine is being closed under the holders: they keep holding (and being sampled) until the exit. */
  readonly closing: () => boolean;
}

export class WorkerOperations {
  private seq = 0;
  private writes = 0;

  constructor(private readonly parts: WorkerParts) {}

  /** Loops until the worker stops. */
  async loop(random: SeededRandom): Promise<void> {
    const { task, stopping, closing } = this.parts;
    while (!stopping() && !closing()) {
      const kind = random.weighted(task.mix);
      try {
        if (kind === 'permit') await this.permit(random);
        else await this.lock(kind, random);
      } catch (err) {
        this.parts.log.log({ e: 'acquire-fail', kind: 'lock', key: '?', error: `unexpected: ${reasonName(err)}` });
      }
      await sleep(random.int(0, 30));
    }
  }

  private nextHold(): string {
    return `${this.parts.task.name}:${++this.seq}`;
  }

  private async lock(kind: Exclude<OperationKind, 'permit'>, random: SeededRandom): Promise<void> {
    const { task, engine, log } = this.parts;
    const key = random.pick(task.lockKeys);
    const leaseMs = random.pick(task.leases);
    const mode = kind === 'read' ? 'read' : 'write';
    const autoExtend = kind === 'exclusive' || (kind === 'read' && random.chance(0.5));
    const calledAt = now();
    let handle: LockHandle | null = null;
    try {
      if (kind === 'poll') {
        // tryAcquire every few milliseconds: a grant lands as soon as the lease ends in Redis.
        const until = calledAt + task.pollMs;
        while (!handle && now() < until && !this.parts.stopping()) {
          handle = await engine.tryAcquire(key, { mode, leaseMs, autoExtend });
          if (!handle) await sleep(random.int(1, 4));
        }
        if (!handle) return;
      } else {
        handle = await engine.acquire(key, { mode, leaseMs, autoExtend, waitTimeoutMs: 2_000 });
      }
    } catch (err) {
      log.log({ e: 'acquire-fail', kind: 'lock', key, error: reasonName(err) });
      await sleep(random.int(20, 150));
      return;
    }
    const hold = this.nextHold();
    const h = handle;
    log.log({
      e: 'grant',
      hold,
      kind: 'lock',
      key,
      mode,
      fence: h.fencingToken,
      token: h.token,
      leaseMs,
      autoExtend,
      calledAt,
    });
    this.parts.observer.track(
      hold,
      { isHeld: () => h.isHeld, state: () => h.state, signal: () => h.signal },
      (listener) => h.onStateChange(listener),
    );
    const [lo, hi] = autoExtend ? [0, 2.5] : task.noExtendHold;
    const holdMs = random.int(Math.round(leaseMs * lo), Math.round(leaseMs * hi));
    await this.holdFor(
      holdMs,
      random,
      mode === 'write' ? { hold, key, fence: h.fencingToken, token: h.token } : null,
      () => h.signal.aborted,
    );
    if (this.parts.closing()) return; // the engine releases it; the observer keeps sampling the handle
    await this.release(hold, () => h.release());
  }

  private async permit(random: SeededRandom): Promise<void> {
    const { task, engine, log } = this.parts;
    const key = random.pick(task.permitKeys);
    const leaseMs = random.pick(task.leases);
    const autoExtend = random.chance(0.7);
    const calledAt = now();
    let p: PermitHandle;
    try {
      p = await engine.acquirePermit(key, { limit: task.permitLimit, leaseMs, autoExtend, waitTimeoutMs: 2_000 });
    } catch (err) {
      log.log({ e: 'acquire-fail', kind: 'permit', key, error: reasonName(err) });
      await sleep(random.int(20, 150));
      return;
    }
    const hold = this.nextHold();
    log.log({
      e: 'grant',
      hold,
      kind: 'permit',
      key,
      mode: 'write',
      fence: p.fencingToken,
      token: p.token,
      leaseMs,
      autoExtend,
      limit: p.limit,
      calledAt,
    });
    this.parts.observer.track(
      hold,
      { isHeld: () => p.isHeld, state: () => p.state, signal: () => p.signal },
      (listener) => p.onStateChange(listener),
    );
    await this.holdFor(
      random.int(0, Math.round(leaseMs * (autoExtend ? 2 : 1.2))),
      random,
      null,
      () => p.signal.aborted,
    );
    if (this.parts.closing()) return;
    await this.release(hold, () => p.release());
  }

  /** Campaigns for `name` until the worker stops or closes; each term holds a while, writing fenced, then resigns. */
  campaign(name: string, random: SeededRandom): () => Promise<void> {
    const { task, engine, log } = this.parts;
    let calledAt = now();
    return engine.campaign(
      name,
      async (lead) => {
        const hold = this.nextHold();
        log.log({
          e: 'grant',
          hold,
          kind: 'leader' satisfies HoldKind,
          key: name,
          mode: 'write',
          fence: lead.term,
          token: '',
          leaseMs: task.leaderLeaseMs,
          autoExtend: true,
          calledAt,
        });
        this.parts.observer.track(
          hold,
          { isHeld: () => !lead.signal.aborted, state: () => lead.state, signal: () => lead.signal },
          (listener) => lead.onStateChange(listener),
        );
        const token = `${hold}@${lead.term}`;
        await this.holdFor(
          random.int(200, 2_500),
          random,
          { hold, key: `leader:${name}`, fence: lead.term, token },
          () => lead.signal.aborted,
        );
        // Closing: the term ends with the engine, and the observer keeps sampling it until the exit.
        if (this.parts.closing()) return;
        this.parts.observer.untrack(hold);
        log.log({ e: 'release', hold, phase: 'send' });
        calledAt = now();
      },
      { leaseMs: task.leaderLeaseMs, restartDelayMs: 100 },
    );
  }

  /**
   * Holds for `ms` (less if `lost()` says so, or the engine is being closed), making 0 to 3 fenced writes meanwhile
   * when `fenced` is given.
   */
  private async holdFor(
    ms: number,
    random: SeededRandom,
    fenced: { hold: string; key: string; fence: number; token: string } | null,
    lost: () => boolean,
  ): Promise<void> {
    const end = now() + ms;
    const writes = fenced ? random.int(0, 3) : 0;
    for (let i = 0; i < writes && now() < end && !lost(); i++) {
      await sleep(random.int(0, Math.max(0, Math.round((end - now()) / (writes - i)))));
      if (!lost() && fenced) await this.write(fenced);
    }
    while (now() < end && !lost() && !this.parts.closing()) await sleep(Math.min(50, Math.max(1, end - now())));
  }

  private async write(w: { hold: string; key: string; fence: number; token: string }): Promise<void> {
    const { log, store, task } = this.parts;
    const id = `${task.name}#${++this.writes}`;
    log.log({ e: 'write', id, hold: w.hold, key: w.key, fence: w.fence, token: w.token, phase: 'send' });
    let outcome: 'accepted' | 'refused' | 'error';
    try {
      const [hash, list] = storeKeys(task.prefix, w.key);
      outcome =
        (await store.eval(FENCED_WRITE, 2, hash, list, String(w.fence), w.token, id)) === 1 ? 'accepted' : 'refused';
      // With replica acknowledgement, so is the store: a write the replica did not get is of unknown outcome.
      const replicas = task.engine?.waitForReplicas;
      if (outcome === 'accepted' && replicas && Number(await store.wait(replicas.replicas, 500)) < replicas.replicas)
        outcome = 'error';
    } catch {
      outcome = 'error';
    }
    const node = store.stream?.remotePort;
    log.log({ e: 'write', id, hold: w.hold, key: w.key, fence: w.fence, token: w.token, phase: 'done', outcome, node });
  }

  private async release(hold: string, release: () => Promise<boolean>): Promise<void> {
    const { log, observer } = this.parts;
    observer.untrack(hold);
    log.log({ e: 'release', hold, phase: 'send' });
    let result: string;
    try {
      result = String(await release());
    } catch (err) {
      result = `error: ${reasonName(err)}`;
    }
    log.log({ e: 'release', hold, phase: 'done', result });
  }
}
