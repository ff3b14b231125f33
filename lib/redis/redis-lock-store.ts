import { performance } from 'node:perf_hooks';
import type { LockHolderInfo, LockInfo, LockMode } from '../types/lock.types.js';
import { openConnections, watchConnection } from './connection.js';
import type { LockConnections, RedisClient, RedisConnectionInput } from './connection.js';
import { lockKeys } from './key-layout.js';
import type { LockKeys } from './key-layout.js';
import { LockSubscriber } from './lock-subscriber.js';
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
  WakeUp,
  WakeUpSubscription,
} from './lock-store.js';
import { ACQUIRE, CANCEL_WAIT, EXTEND, FORCE_RELEASE, INSPECT, RELEASE, RENEW_MANY } from './lua-scripts.js';
import type { LuaScript } from './lua-scripts.js';
import { unavailable } from './redis-failures.js';
import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';

const SCRIPTS_BY_SHA = new Map([ACQUIRE, CANCEL_WAIT, EXTEND, FORCE_RELEASE, INSPECT, RELEASE, RENEW_MANY].map((s) => [s.sha, s.source]));
const scriptSource = (sha: string) => SCRIPTS_BY_SHA.get(sha);

/** Holds renewed per script call: 2 keys each, so one call stays well under Redis's argument limits. */
const RENEW_CHUNK = 200;
/** Lock names kept ready-made; the cache starts over when full. */
const NAMES_CACHE_SIZE = 10_000;
const BLOCKED_BY: readonly BlockedBy[] = ['writer', 'writer', 'readers', 'waiting-writer', 'not-held', 'fair-queue'];

/**
 * The lock store on Redis (standalone or Cluster): every state change is one Lua script over the lock's keys, which
 * share one hash tag. The only place that knows the scripts' KEYS/ARGV order, the mode encoding (`w`/`r`), the
 * holder record `count|seq|fence|since|host|pid|app|owner`, the wake-up messages and the reply codes.
 */
export class RedisLockStore implements LockStore {
  private readonly connections: LockConnections;
  private readonly client: RedisClient;
  private readonly subscriber: LockSubscriber;
  private readonly names = new Map<string, LockKeys>();
  /** `host|pid|app|`, the start of every holder record's identity part. */
  private readonly identity: string;

  constructor(
    redis: RedisConnectionInput,
    private readonly options: LockStoreContext,
  ) {
    this.connections = openConnections(redis, { commandTimeoutMs: options.commandTimeoutMs });
    this.client = this.connections.client;
    watchConnection(this.connections.subscriber, 'subscriber', options.onConnectionState);
    // A client the application passed in reports its errors to the application's own listeners.
    if (this.connections.owned) watchConnection(this.client, 'command', options.onConnectionState);
    this.subscriber = new LockSubscriber(this.connections.subscriber, options.subscriptionLingerMs, options.onConnectionError);
    const { host, pid, app } = options.identity;
    const clean = (s: string) => s.replace(/\|/g, '_');
    this.identity = `${clean(host)}|${pid}|${clean(app)}|`;
  }

  /** @internal The connection scripts run on (the quorum store learns each master's start time on it). */
  get commandConnection(): RedisClient {
    return this.client;
  }

  lock(key: string): LockKeys {
    let names = this.names.get(key);
    if (!names) {
      if (this.names.size >= NAMES_CACHE_SIZE) this.names.clear();
      names = lockKeys(this.options.keyPrefix, key);
      this.names.set(key, names);
    }
    return names;
  }

  /**
   * ACQUIRE. ARGV: token, mode with flags (`e` re-entry only, `f` fair), leaseMs, seq, holder identity, waiter id,
   * and the downgrade token only when there is one (every argument costs on both sides of the connection).
   * Reply `{1, fence, reentered}` or `{0, waitMs, blockedBy}`.
   */
  async acquire(call: AcquireCall): Promise<AcquireReply> {
    const names = call.lock as LockKeys;
    let flags: string = modeCode(call.mode);
    if (call.reentry) flags += 'e';
    if (call.fair) flags += 'f';
    const args: (string | number)[] = [call.token, flags, call.leaseMs, call.seq, this.identity + call.ownerId, call.waiterId];
    if (call.downgradeToken !== '') args.push(call.downgradeToken);
    const [ok, value, detail] = (await this.run(ACQUIRE, names.all, args)) as [number, number, number];
    if (ok === 1) return { granted: true, fencingToken: value, reentered: detail === 1 };
    return { granted: false, retryInMs: value, blockedBy: BLOCKED_BY[detail] ?? 'writer' };
  }

  /** RELEASE. ARGV: token, seq ('' = every level). Reply 2 ended, 1 one level, 0 not held. */
  async release(lock: LockRef, token: string, seq: number | undefined): Promise<ReleaseReply> {
    const names = lock as LockKeys;
    const reply = await this.run(RELEASE, names.all, [token, seq ?? '']);
    return reply === 2 ? 'ended' : reply === 1 ? 'level' : 'not-held';
  }

  /** RENEW_MANY. KEYS: state and leases of each hold; ARGV: token and leaseMs of each. One script call per chunk. */
  async renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    // A Cluster cannot take keys of several slots in one script: one call per hold there.
    const chunk = this.client.isCluster ? 1 : RENEW_CHUNK;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < holds.length; i += chunk) {
      const keys: string[] = [];
      const args: (string | number)[] = [];
      for (let j = i; j < Math.min(i + chunk, holds.length); j++) {
        const { lock, token, leaseMs } = holds[j];
        const names = lock as LockKeys;
        keys.push(names.state, names.leases);
        args.push(token, leaseMs);
      }
      calls.push(this.run(RENEW_MANY, keys, args));
    }
    const replies = (await Promise.all(calls)) as number[][];
    return replies.flat().map((r) => r === 1);
  }

  /** EXTEND. ARGV: token, ms. Reply 1, or 0 when not held. */
  async extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return (await this.run(EXTEND, (lock as LockKeys).all, [token, ms])) === 1;
  }

  /** CANCEL_WAIT. ARGV: waiter id, mode. */
  async cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    await this.run(CANCEL_WAIT, (lock as LockKeys).all, [waiterId, modeCode(mode)]);
  }

  /** FORCE_RELEASE. No ARGV. Reply 1 if it was held. */
  async forceRelease(lock: LockRef): Promise<boolean> {
    return (await this.run(FORCE_RELEASE, (lock as LockKeys).all, [])) === 1;
  }

  /** INSPECT. Reply `{now, flat HGETALL of the state, flat live leases, waiting writers, waiting readers}`. */
  async inspect(lock: LockRef): Promise<LockInfo | null> {
    const names = lock as LockKeys;
    const [now, fields, leases, writersWaiting, readersWaiting] = (await this.run(INSPECT, names.all, [])) as [
      number,
      string[],
      string[],
      number,
      number,
    ];
    const state = new Map<string, string>();
    for (let i = 0; i < fields.length; i += 2) state.set(fields[i], fields[i + 1]);
    const writer = state.get('w');
    const holders: LockHolderInfo[] = [];
    for (let i = 0; i < leases.length; i += 2) {
      const token = leases[i];
      const record = state.get(`h:${token}`);
      if (record) holders.push(decodeHolder(record, token === writer ? 'write' : 'read', Number(leases[i + 1]) - now));
    }
    if (holders.length === 0) return null;
    return {
      key: names.key,
      mode: holders.some((h) => h.mode === 'write') ? 'write' : 'read',
      holders,
      waiting: writersWaiting + readersWaiting,
      waitingWriters: writersWaiting,
      waitingReaders: readersWaiting,
      fencingToken: Number(state.get('f') ?? 0),
    };
  }

  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    return this.subscriber.listen((lock as LockKeys).channel, (message) => onWakeUp(decodeWakeUp(message)));
  }

  isListening(lock: LockRef): boolean {
    return this.subscriber.isLive((lock as LockKeys).channel);
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    const connection = operation === 'subscribe' ? this.connections.subscriber : this.client;
    return unavailable(failure, operation, key, {
      timeoutMs,
      connected: connection.status === 'ready',
      scripts: scriptSource,
      keyPrefix: this.options.keyPrefix,
    });
  }

  async ping(timeoutMs: number): Promise<StorePing> {
    const [command, subscriber] = await Promise.all([timedPing(this.client, timeoutMs), timedPing(this.connections.subscriber, timeoutMs)]);
    const error = command.error ?? subscriber.error;
    return { command: command.ok, subscriber: subscriber.ok, commandMs: command.ms, subscriberMs: subscriber.ms, ...(error ? { error } : {}) };
  }

  async close(): Promise<void> {
    this.subscriber.close();
    await this.connections.close();
  }

  /** Runs `script` by SHA, loading it when Redis answers NOSCRIPT (first use, restart, `SCRIPT FLUSH`). */
  private async run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return this.client.eval(script.source, keys.length, ...keys, ...args);
      throw err;
    }
  }
}

function modeCode(mode: LockMode): 'w' | 'r' {
  return mode === 'write' ? 'w' : 'r';
}

/** Wake-up messages, as the scripts publish them: `r` every reader, `w:<id>` / `f:<id>` one named waiter. */
export function decodeWakeUp(message: string): WakeUp {
  return message === 'r' ? 'readers' : { waiterId: message.slice(2) };
}

/** A holder record `count|seq|fence|since|host|pid|app|owner` (the owner id is last: it may contain anything). */
export function decodeHolder(record: string, mode: LockMode, remainingLeaseMs: number): LockHolderInfo {
  const [count, , fence, since, host, pid, app, ...owner] = record.split('|');
  return {
    mode,
    owner: owner.join('|'),
    host,
    pid: Number(pid),
    app,
    holdCount: Number(count),
    since: new Date(Number(since)),
    remainingLeaseMs,
    fencingToken: Number(fence),
  };
}

async function timedPing(c: RedisClient, timeoutMs: number): Promise<{ ok: boolean; ms: number; error?: string }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      c.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no PING answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true, ms: performance.now() - start };
  } catch (err) {
    return { ok: false, ms: performance.now() - start, error: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}
