import { performance } from 'node:perf_hooks';
import type { LockHolderInfo, LockInfo, LockMode } from '../types/lock.types.js';
import { openConnections, watchConnection } from './connection.js';
import type { LockConnections, RedisClient, RedisConnectionInput } from './connection.js';
import { Command } from 'ioredis';
import type { Cluster, Redis } from 'ioredis';
import { lockKeys } from './key-layout.js';
import type { LockKeys } from './key-layout.js';
import { LockSubscriber, plainChannels } from './lock-subscriber.js';
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
import { ACQUIRE, ACQUIRE_BATCH, ALL_SCRIPTS, CANCEL_WAIT, EXTEND, FORCE_RELEASE, INSPECT, KEEP_WAITING, RELEASE, RENEW_MANY, RENEW_MANY_CROSS_SLOT, RELEASE_BATCH, sharded } from './lua-scripts.js';
import type { LuaScript } from './lua-scripts.js';
import { unavailable } from './redis-failures.js';
import { NotReplicated, ReplicaAcks } from './replica-wait.js';
import { ShardedChannels, slotOf } from './sharded-channels.js';
import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';

const SCRIPTS_BY_SHA = new Map(ALL_SCRIPTS.map((s) => [s.sha, s.source]));
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
  /** On a Cluster: the per-master sharded subscriptions (`null` standalone). */
  private readonly shardedChannels: ShardedChannels | null;
  /** On a Cluster: whether renewals may batch the slots of one node (cleared once a node refuses the script flag). */
  private crossSlotRenewals = true;
  private readonly names = new Map<string, LockKeys>();
  /**
   * On a standalone Redis (or Sentinel, or each master of a quorum), the acquisitions and releases that callers of
   * this process ask for in the same tick go out as one script call (`ACQUIRE_BATCH`, `RELEASE_BATCH`): one command
   * to build, write and run instead of one per caller. Not on a Cluster (a batch would span slots), nor with
   * `waitForReplicas` (each grant waits for its own acknowledgement).
   */
  private readonly acquires: ScriptBatcher | undefined;
  private readonly releases: ScriptBatcher | undefined;
  /** `waitForReplicas`: scripts that write are followed by `WAIT` in the same round trip. */
  private readonly acks: ReplicaAcks | undefined;
  /** `host|pid|app|`, the start of every holder record's identity part. */
  private readonly identity: string;

  constructor(
    redis: RedisConnectionInput,
    private readonly options: LockStoreContext,
  ) {
    this.connections = openConnections(redis, { commandTimeoutMs: options.commandTimeoutMs });
    this.client = this.connections.client;
    const plain = this.connections.subscriber;
    if (plain) watchConnection(plain, 'subscriber', options.onConnectionState);
    // A client the application passed in reports its errors to the application's own listeners.
    if (this.connections.owned) watchConnection(this.client, 'command', options.onConnectionState);
    this.shardedChannels = plain
      ? null
      : new ShardedChannels(this.client as Cluster, { connectTimeoutMs: options.commandTimeoutMs, report: options.onConnectionState });
    this.subscriber = new LockSubscriber(this.shardedChannels ?? plainChannels(plain as Redis), options.subscriptionLingerMs, options.onConnectionError);
    const { host, pid, app } = options.identity;
    const clean = (s: string) => s.replace(/\|/g, '_');
    this.identity = `${clean(host)}|${pid}|${clean(app)}|`;
    if (options.waitForReplicas) {
      const acks = new ReplicaAcks(this.client, options.waitForReplicas);
      this.acks = acks;
      void acks.probe().then((refused) => {
        if (refused && isReplyError(refused)) options.onConnectionError(new NotReplicated(0, 0, 0, undefined, refused));
      });
    }
    if (!this.acks && !this.client.isCluster) {
      const run = (script: LuaScript, keys: readonly string[], args: readonly (string | number)[]) => this.run(script, keys, args);
      this.acquires = new ScriptBatcher(ACQUIRE, ACQUIRE_BATCH, run);
      this.releases = new ScriptBatcher(RELEASE, RELEASE_BATCH, run);
    }
  }

  /** @internal The connection scripts run on (the quorum store learns each master's start time on it). */
  get commandConnection(): RedisClient {
    return this.client;
  }

  lock(key: string): LockKeys {
    let names = this.names.get(key);
    if (!names) {
      if (this.names.size >= NAMES_CACHE_SIZE) this.names.clear();
      names = lockKeys(this.options.keyPrefix, key, this.client.options.keyPrefix);
      this.names.set(key, names);
    }
    return names;
  }

  /**
   * ACQUIRE. ARGV: token, mode with flags (`e` re-entry only, `f` fair), leaseMs, seq, holder identity, waiter id,
   * and the downgrade token only when there is one (every argument costs on both sides of the connection).
   * Reply `{1, fence, reentered}` or `{0, waitMs, blockedBy}`.
   */
  acquire(call: AcquireCall): Promise<AcquireReply> {
    const names = call.lock as LockKeys;
    let flags: string = modeCode(call.mode);
    if (call.reentry) flags += 'e';
    if (call.fair) flags += 'f';
    const args: (string | number)[] = [call.token, flags, call.leaseMs, call.seq, this.identity + call.ownerId, call.waiterId];
    if (call.downgradeToken !== '') args.push(call.downgradeToken);
    if (this.acks) return this.acquireAcked(this.acks, names, args);
    // No `async`/`await` on the hot path: each costs a promise and a microtask per call.
    if (this.acquires) return this.acquires.call(names.all, args).then(acquireReply);
    return this.run(ACQUIRE, names.all, args).then(acquireReply);
  }

  /** ACQUIRE followed by `WAIT` (`waitForReplicas`). */
  private async acquireAcked(acks: ReplicaAcks, names: LockKeys, args: readonly (string | number)[]): Promise<AcquireReply> {
    const acked = await acks.run(this.variant(ACQUIRE), names.all, args);
    const reply = acquireReply(acked.reply);
    // Only a grant needs the replicas: a refusal changed nothing a failover could lose that matters.
    if (reply.granted && (acked.refused !== undefined || acked.acked < acked.wanted)) {
      throw new NotReplicated(acked.acked, acked.wanted, acks.settings.timeoutMs, reply, acked.refused);
    }
    return reply;
  }

  /** A script that changes a lease, acknowledged by the replicas when `waitForReplicas` is on. */
  private async runLeaseChange(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (!this.acks) return this.run(script, keys, args);
    const acked = await this.acks.run(this.variant(script), keys, args);
    if (acked.refused !== undefined || acked.acked < acked.wanted) {
      throw new NotReplicated(acked.acked, acked.wanted, this.acks.settings.timeoutMs, undefined, acked.refused);
    }
    return acked.reply;
  }

  /** RELEASE. ARGV: token, seq ('' = every level). Reply 2 ended, 1 one level, 0 not held. */
  release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs = 0): Promise<ReleaseReply> {
    const names = lock as LockKeys;
    const args: (string | number)[] = holdAtLeastMs > 0 ? [token, seq ?? '', holdAtLeastMs] : [token, seq ?? ''];
    const sent = this.releases ? this.releases.call(names.all, args) : this.run(RELEASE, names.all, args);
    return sent.then((reply) => (reply === 2 ? 'ended' : reply === 1 ? 'level' : 'not-held'));
  }

  /**
   * RENEW_MANY. KEYS: state and leases of each hold; ARGV: token and leaseMs of each. One script call per chunk of up
   * to 200 holds; on a Cluster, per chunk of the holds one master serves (see `renewOnCluster`).
   */
  async renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    const all = holds.map((_, i) => i);
    if (this.client.isCluster) return this.renewOnCluster(holds, all);
    const replies = await Promise.all(chunks(all, RENEW_CHUNK).map((batch) => this.renewBatch(RENEW_MANY, holds, batch)));
    return replies.flat().map((r) => r === 1);
  }

  /**
   * Cluster renewals, grouped by the master that serves each hold's slot (the command client's slot map): one
   * RENEW_MANY_CROSS_SLOT call per chunk of a node's holds (Redis 7.0+: `allow-cross-slot-keys`). A batch the node
   * rejects because a slot of it moved (MOVED, a key no longer local, too many redirections) or because it refuses the
   * flag is sent again per slot, where the client follows redirections itself; a server that refuses the flag is
   * remembered and later ticks batch per slot at once. Other failures (node down, timeout) reject the whole call, for
   * the watchdog to retry. A hold is reported lost only on a script's own answer, never because its batch was
   * misrouted.
   */
  private async renewOnCluster(holds: readonly RenewCall[], all: readonly number[]): Promise<boolean[]> {
    const out = new Array<boolean>(holds.length).fill(false);
    const slots = all.map((i) => slotOf((holds[i].lock as LockKeys).state));
    const map = (this.client as Cluster).slots;
    const groups = new Map<string, number[]>();
    for (const i of all) {
      const slot = slots[i];
      const group = (this.crossSlotRenewals && map[slot]?.[0]) || `slot ${slot}`;
      const members = groups.get(group);
      if (members) members.push(i);
      else groups.set(group, [i]);
    }
    const settle = (batch: readonly number[], replies: number[]) => batch.forEach((i, j) => (out[i] = replies[j] === 1));
    const perSlot = async (batch: readonly number[]) => {
      const bySlot = new Map<number, number[]>();
      for (const i of batch) bySlot.set(slots[i], [...(bySlot.get(slots[i]) ?? []), i]);
      await Promise.all([...bySlot.values()].map(async (part) => settle(part, await this.renewBatch(RENEW_MANY, holds, part))));
    };
    await Promise.all(
      [...groups.values()].flatMap((group) =>
        chunks(group, RENEW_CHUNK).map(async (batch) => {
          if (batch.every((i) => slots[i] === slots[batch[0]])) return settle(batch, await this.renewBatch(RENEW_MANY, holds, batch));
          try {
            settle(batch, await this.renewBatch(RENEW_MANY_CROSS_SLOT, holds, batch));
          } catch (err) {
            if (refusesCrossSlot(err)) this.crossSlotRenewals = false;
            // A failure that is not about routing (node down, timeout) is retried by the watchdog as a whole, not
            // multiplied into one call per slot.
            else if (!misrouted(err)) throw err;
            await perSlot(batch);
          }
        }),
      ),
    );
    return out;
  }

  /** One RENEW_MANY call (key names as KEYS), or RENEW_MANY_CROSS_SLOT (the first state routes it, names in ARGV). */
  private async renewBatch(script: LuaScript, holds: readonly RenewCall[], batch: readonly number[]): Promise<number[]> {
    const crossSlot = script === RENEW_MANY_CROSS_SLOT;
    const keys: string[] = crossSlot ? [(holds[batch[0]].lock as LockKeys).state] : [];
    const args: (string | number)[] = [];
    for (const i of batch) {
      const { lock, token, leaseMs } = holds[i];
      const names = lock as LockKeys;
      if (crossSlot) args.push(names.state, names.leases, token, leaseMs);
      else {
        keys.push(names.state, names.leases);
        args.push(token, leaseMs);
      }
    }
    return (await this.runLeaseChange(script, keys, args)) as number[];
  }

  /** EXTEND. ARGV: token, ms. Reply 1, or 0 when not held. */
  async extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return (await this.runLeaseChange(EXTEND, (lock as LockKeys).all, [token, ms])) === 1;
  }

  /** CANCEL_WAIT. ARGV: waiter id, mode. */
  async cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    await this.run(CANCEL_WAIT, (lock as LockKeys).all, [waiterId, modeCode(mode)]);
  }

  /**
   * KEEP_WAITING. KEYS: the 6 keys of each waiter's lock; ARGV: waiter id, mode, fair flag of each. One call per
   * chunk of up to 200 waiters; on a Cluster one per slot (a process waits on few locks at a time).
   */
  async keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    const all = waits.map((_, i) => i);
    const groups = this.client.isCluster ? [...groupBy(all, (i) => slotOf((waits[i].lock as LockKeys).state)).values()] : chunks(all, RENEW_CHUNK);
    const out = new Array<WaitingReply>(waits.length).fill('waiting');
    await Promise.all(
      groups.map(async (batch) => {
        const keys: string[] = [];
        const args: string[] = [];
        for (const i of batch) {
          const { lock, mode, waiterId, fair } = waits[i];
          keys.push(...(lock as LockKeys).all);
          args.push(waiterId, modeCode(mode), fair ? '1' : '0');
        }
        const replies = (await this.run(KEEP_WAITING, keys, args)) as number[];
        batch.forEach((i, j) => (out[i] = replies[j] === 1 ? 'waiting' : 'attempt'));
      }),
    );
    return out;
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
    const connection = operation === 'subscribe' ? (this.connections.subscriber ?? this.client) : this.client;
    return unavailable(failure, operation, key, {
      timeoutMs,
      connected: connection.status === 'ready',
      scripts: scriptSource,
      keyPrefix: this.options.keyPrefix,
    });
  }

  async ping(timeoutMs: number): Promise<StorePing> {
    const plain = this.connections.subscriber;
    const [command, subscriber] = await Promise.all([
      timedPing(() => this.client.ping(), timeoutMs),
      timedPing(plain ? () => plain.ping() : () => (this.shardedChannels as ShardedChannels).ping(), timeoutMs),
    ]);
    const error = command.error ?? subscriber.error;
    return { command: command.ok, subscriber: subscriber.ok, commandMs: command.ms, subscriberMs: subscriber.ms, ...(error ? { error } : {}) };
  }

  async close(): Promise<void> {
    this.subscriber.close();
    this.shardedChannels?.close();
    await this.connections.close();
  }

  /** On a Cluster, the variant of `base` that wakes waiters by SPUBLISH (sharded pub/sub). */
  private variant(base: LuaScript): LuaScript {
    return this.shardedChannels ? sharded(base) : base;
  }

  /** Runs `script` by SHA, loading it when Redis answers NOSCRIPT (first use, restart, `SCRIPT FLUSH`). */
  private run(base: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const script = this.variant(base);
    return evalsha(this.client, script.sha, keys, args).catch((err: unknown) => {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return this.client.eval(script.source, keys.length, ...keys, ...args);
      throw err;
    });
  }

}

const NO_ARGS: never[] = [];

/**
 * `EVALSHA sha numkeys ...keys ...args`, its argument list laid out once. ioredis' command methods copy every
 * argument through `Array.prototype.flat`, about 65 ns each on Node 20: 1 µs for one acquisition, 14 µs for a batch
 * of 16, the largest single cost of a batched cycle. The command goes through the client's `sendCommand` like any
 * other (offline queue, Cluster routing by its first key, reconnects). A client created with ioredis' own
 * `keyPrefix` takes the usual path, which prefixes the KEYS.
 */
function evalsha(client: RedisClient, sha: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  if (client.options.keyPrefix) return client.evalsha(sha, keys.length, ...keys, ...args);
  const command = new Command('evalsha', NO_ARGS, {
    replyEncoding: 'utf8',
    errorStack: client.options.showFriendlyErrorStack ? new Error() : undefined,
  });
  // As the command methods would send them: every argument a string (the numbers here are small integers).
  const all = new Array<string>(2 + keys.length + args.length);
  all[0] = sha;
  all[1] = String(keys.length);
  let i = 2;
  for (const key of keys) all[i++] = key;
  for (const arg of args) all[i++] = typeof arg === 'string' ? arg : String(arg);
  command.args = all;
  void client.sendCommand(command);
  return command.promise;
}

/** Items of one batch script call at most (6 keys and about 8 arguments each). */
const MAX_BATCH = 16;

type ScriptRunner = (script: LuaScript, keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

interface BatchItem {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  readonly resolve: (reply: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Calls of one per-lock script made in the same tick, sent together: alone as `single`, several as one call of
 * `batch` (see `batched` in lua-scripts.ts). Flushed on `process.nextTick`, which runs once the promise jobs of the
 * current turn have run, so callers resumed by the same batch of replies ask together.
 */
class ScriptBatcher {
  private items: BatchItem[] | undefined;
  /** Script calls of this batcher sent and not answered yet. */
  private inFlight = 0;

  constructor(
    private readonly single: LuaScript,
    private readonly batch: LuaScript,
    private readonly run: ScriptRunner,
  ) {}

  call(keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    // Nothing under way: a lone caller (one worker, a quiet process) goes out at once, with no deferral or batch.
    if (!this.items && this.inFlight === 0) {
      this.inFlight++;
      return this.run(this.single, keys, args).then(this.answered, this.failed);
    }
    return new Promise((resolve, reject) => {
      if (!this.items) {
        this.items = [];
        process.nextTick(this.flush);
      }
      this.items.push({ keys, args, resolve, reject });
    });
  }

  private readonly flush = () => {
    const items = this.items ?? [];
    this.items = undefined;
    for (let i = 0; i < items.length; i += MAX_BATCH) this.send(items.slice(i, i + MAX_BATCH));
  };

  private readonly answered = <T>(reply: T): T => {
    this.inFlight--;
    return reply;
  };

  private readonly failed = (err: unknown): never => {
    this.inFlight--;
    throw err;
  };

  private send(items: readonly BatchItem[]): void {
    this.inFlight++;
    if (items.length === 1) {
      const [item] = items;
      this.run(this.single, item.keys, item.args).then(this.answered, this.failed).then(item.resolve, item.reject);
      return;
    }
    const keys: string[] = [];
    const args: (string | number)[] = [items.length];
    for (const item of items) {
      keys.push(...item.keys);
      args.push(item.args.length, ...item.args);
    }
    this.run(this.batch, keys, args).then(this.answered, this.failed).then(
      (replies) => items.forEach((item, i) => item.resolve((replies as unknown[])[i])),
      (err: unknown) => items.forEach((item) => item.reject(err)),
    );
  }
}

/** ACQUIRE's reply `{1, fence, reentered}` or `{0, waitMs, blockedBy}`. */
function acquireReply(raw: unknown): AcquireReply {
  const [ok, value, detail] = raw as [number, number, number];
  if (ok === 1) return { granted: true, fencingToken: value, reentered: detail === 1 };
  return { granted: false, retryInMs: value, blockedBy: BLOCKED_BY[detail] ?? 'writer' };
}

/** An error reply of the server (as opposed to a connection failure). */
function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/** `items` grouped by `keyOf`, in first-seen order. */
function groupBy<T, K>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** `items` in runs of at most `size`. */
function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Whether the server refuses a script that takes keys of several slots (Redis before 7.0, or a proxy). */
function refusesCrossSlot(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /CROSSSLOT|shebang|Unknown lua shebang|allow-cross-slot|Error compiling script/i.test(message);
}

/** Whether a cross-slot batch failed because a slot of it is not (or no longer) served by the node it reached. */
function misrouted(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /^(MOVED|ASK|TRYAGAIN) |non local key|Too many Cluster redirections|hash to the same slot/i.test(message);
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
    finished: count === '0',
    since: new Date(Number(since)),
    remainingLeaseMs,
    fencingToken: Number(fence),
  };
}

async function timedPing(ping: () => Promise<unknown>, timeoutMs: number): Promise<{ ok: boolean; ms: number; error?: string }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ping(),
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
