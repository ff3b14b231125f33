import { performance } from 'node:perf_hooks';
import type { LockInfo, LockMode } from '../types/lock.types.js';
import { openDriver } from './connection.js';
import type { RedisConnectionInput } from './connection.js';
import { outageReporter } from './driver/connection-watch.js';
import type { DriverChannels, RedisDriver } from './driver/redis-driver.js';
import { lockKeys } from './key-layout.js';
import { kindConflict } from '../store/kind-conflict.js';
import type { LockConfigError } from '../errors/lock-config.error.js';
import { checkServer } from './server-check.js';
import type { LockKeys } from './key-layout.js';
import { LeaseRenewals } from './lease-renewals.js';
import {
  acquireArgs,
  acquireReply,
  decodeWakeUp,
  holderIdentity,
  inspectReply,
  modeCode,
  releaseReply,
} from './lock-script-codec.js';
import { LockSubscriber } from './lock-subscriber.js';
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
} from '../store/lock-store.js';
import {
  ACQUIRE,
  ACQUIRE_BATCH,
  CANCEL_WAIT,
  EXTEND,
  FORCE_RELEASE,
  INSPECT,
  RELEASE,
  RELEASE_BATCH,
} from './scripts/lock-scripts.js';
import { NodeBatches } from './node-batches.js';
import { SCRIPTS, SCRIPT_VARIANTS } from './scripts/index.js';
import { unavailable } from './redis-failures.js';
import type { ScriptBatcher } from './script-batcher.js';
import { ScriptGateway } from './script-gateway.js';
import { WaiterHeartbeat } from './waiter-heartbeat.js';
import type { LockError } from '../errors/lock.error.js';
import type { LockOperation } from '../errors/lock-unavailable.error.js';
import { errorText } from '../common/error-text.js';

/** Lock names kept ready-made; the cache starts over when full. */
const NAMES_CACHE_SIZE = 10_000;

/**
 * The lock store on Redis (standalone, Sentinel or Cluster): every state change is one Lua script over the lock's
 * keys, which share one hash tag. It owns the connections and the wake-up subscriptions; the scripts go out through
 * its `ScriptGateway` (SHA, batching, Cluster variants, replica acknowledgement), their KEYS/ARGV and replies are
 * encoded in `lock-script-codec.ts`, and the watchdog's renewals and the waiters' heartbeat, which take many locks at
 * once, are routed per chunk (per Cluster node) by `LeaseRenewals` and `WaiterHeartbeat`.
 */
export class RedisLockStore implements LockStore {
  /** The client the scripts go out on, whichever library it is of. */
  private readonly driver: RedisDriver;
  private readonly subscriber: LockSubscriber;
  /** The wake-up subscriptions (a connection of their own, or per master on a Cluster). */
  private readonly channels: DriverChannels;
  private readonly stopWatching: () => void;
  private readonly names = new Map<string, LockKeys>();
  /**
   * @internal Sends every script of this store (another primitive on these connections sends its scripts through it
   * too).
   */
  readonly gateway: ScriptGateway;
  /** @internal The watchdog's renewals on these connections (the semaphore's permits are renewed through it too). */
  readonly renewals: LeaseRenewals;
  /** @internal The waiters' heartbeat on these connections (the semaphore's waiters' too). */
  readonly heartbeat: WaiterHeartbeat;
  /**
   * On a standalone Redis (or Sentinel, or each master of a quorum), the acquisitions and releases that callers of
   * this process ask for in the same tick go out as one script call (`ACQUIRE_BATCH`, `RELEASE_BATCH`): one command
   * to build, write and run instead of one per caller (see `ScriptGateway.batches`).
   */
  private readonly acquires: ScriptBatcher | undefined;
  private readonly releases: ScriptBatcher | undefined;
  /** `host|pid|app|`, the start of every holder record's identity part. */
  private readonly identity: string;

  constructor(
    redis: RedisConnectionInput,
    private readonly options: LockStoreContext,
  ) {
    this.driver = openDriver(redis, { commandTimeoutMs: options.commandTimeoutMs });
    // A client the application passed in reports its errors to the application's own listeners; its closes and
    // returns are watched all the same (waiters re-check after an outage once it is back: `OutageRecheck`). A Cluster
    // client of the application's is not watched: its sharded subscriptions report their own state.
    const command = outageReporter('command', options.onConnectionState);
    this.stopWatching =
      this.driver.owned || !this.driver.cluster
        ? this.driver.onConnection(command, { errors: this.driver.owned })
        : () => undefined;
    this.channels = this.driver.channels({
      connectTimeoutMs: options.commandTimeoutMs,
      report: options.onConnectionState,
    });
    this.subscriber = new LockSubscriber(this.channels, options.subscriptionLingerMs, options.onConnectionError);
    this.identity = holderIdentity(options.identity);
    this.gateway = new ScriptGateway(this.driver, {
      shardedPubSub: this.driver.cluster,
      waitForReplicas: options.waitForReplicas,
      scripts: SCRIPT_VARIANTS,
      onConnectionError: options.onConnectionError,
      probeReportDelayMs: options.commandTimeoutMs,
    });
    // One routing for both: a Cluster node that refuses cross-slot scripts is remembered for renewals and heartbeat.
    const batches = new NodeBatches(this.driver);
    this.renewals = new LeaseRenewals(this.gateway, batches);
    this.heartbeat = new WaiterHeartbeat(this.gateway, batches);
    this.acquires = this.gateway.batcher(ACQUIRE, ACQUIRE_BATCH);
    this.releases = this.gateway.batcher(RELEASE, RELEASE_BATCH);
  }

  /** @internal The connection scripts run on (the quorum store learns each master's start time on it). */
  get commandConnection(): RedisDriver {
    return this.driver;
  }

  lock(key: string): LockKeys {
    let names = this.names.get(key);
    if (!names) {
      if (this.names.size >= NAMES_CACHE_SIZE) this.names.clear();
      names = lockKeys(this.options.keyPrefix, key, this.driver.keyPrefix);
      this.names.set(key, names);
    }
    return names;
  }

  /** ACQUIRE (KEYS/ARGV: `acquireArgs`). */
  acquire(call: AcquireCall): Promise<AcquireReply> {
    const names = call.lock as LockKeys;
    const args = acquireArgs(call, this.identity);
    if (this.gateway.acks) return this.acquireAcked(names, args);
    // No `async`/`await` on the hot path: each costs a promise and a microtask per call.
    const reply = (raw: unknown) => acquireReply(raw, names.key);
    if (this.acquires) return this.acquires.call(names.granting, args).then(reply);
    return this.gateway.run(ACQUIRE, names.granting, args).then(reply);
  }

  /** ACQUIRE followed by `WAIT` (`waitForReplicas`). */
  private async acquireAcked(names: LockKeys, args: readonly (string | number)[]): Promise<AcquireReply> {
    const acked = await this.gateway.runAcked(ACQUIRE, names.granting, args);
    const reply = acquireReply(acked.reply, names.key);
    // Only a grant needs the replicas: a refusal changed nothing a failover could lose that matters.
    const short = reply.granted ? this.gateway.shortfall(acked, reply) : undefined;
    if (short) throw short;
    return reply;
  }

  /**
   * RELEASE. ARGV: token, seq ('' = every level), holdAtLeastMs only when set. Reply 2 ended, 1 one level, 0 not held.
   */
  release(lock: LockRef, token: string, seq: number | undefined, holdAtLeastMs = 0): Promise<ReleaseReply> {
    const names = lock as LockKeys;
    const args: (string | number)[] = holdAtLeastMs > 0 ? [token, seq ?? '', holdAtLeastMs] : [token, seq ?? ''];
    const sent = this.releases ? this.releases.call(names.all, args) : this.gateway.run(RELEASE, names.all, args);
    return sent.then(releaseReply);
  }

  /** RENEW_MANY, in chunks, routed per master on a Cluster (`LeaseRenewals`). */
  renew(holds: readonly RenewCall[]): Promise<boolean[]> {
    return this.renewals.renew(holds);
  }

  /** EXTEND. ARGV: token, ms. Reply 1, or 0 when not held. */
  async extend(lock: LockRef, token: string, ms: number): Promise<boolean> {
    return (await this.gateway.write(EXTEND, (lock as LockKeys).all, [token, ms])) === 1;
  }

  /** CANCEL_WAIT. ARGV: waiter id, mode. */
  async cancelWait(lock: LockRef, mode: LockMode, waiterId: string): Promise<void> {
    await this.gateway.run(CANCEL_WAIT, (lock as LockKeys).all, [waiterId, modeCode(mode)]);
  }

  /**
   * KEEP_WAITING. KEYS: the 6 keys of each waiter's lock; ARGV: waiter id, mode, fair flag of each. One call per
   * chunk of up to 200 waiters; on a Cluster, one KEEP_WAITING_CROSS_SLOT call per chunk of the waiters one master
   * serves, whatever their slots (`WaiterHeartbeat`, routed as the renewals).
   */
  keepWaiting(waits: readonly WaitingCall[]): Promise<WaitingReply[]> {
    return this.heartbeat.keepWaiting(waits);
  }

  /** FORCE_RELEASE. No ARGV. Refused (`LockConfigError`, nothing changed) on a semaphore's key. */
  async forceRelease(lock: LockRef): Promise<boolean> {
    const reply = await this.gateway.run(FORCE_RELEASE, (lock as LockKeys).all, []);
    if (reply === -1) throw kindConflict(lock.key, 'semaphore');
    return reply === 1;
  }

  /** INSPECT. No ARGV. Reply decoded by `inspectReply`. */
  async inspect(lock: LockRef): Promise<LockInfo | null> {
    const names = lock as LockKeys;
    return inspectReply(names, await this.gateway.run(INSPECT, names.all, []));
  }

  listen(lock: LockRef, onWakeUp: (wakeUp: WakeUp) => void): WakeUpSubscription {
    return this.subscriber.listen((lock as LockKeys).channel, (message) => onWakeUp(decodeWakeUp(message)));
  }

  isListening(lock: LockRef): boolean {
    return this.subscriber.isLive((lock as LockKeys).channel);
  }

  describeFailure(failure: unknown, operation: LockOperation, key: string | undefined, timeoutMs: number): LockError {
    return unavailable(failure, operation, key, {
      timeoutMs,
      connected: operation === 'subscribe' ? this.channels.connected : this.driver.connected,
      scripts: this.gateway.sourceOf,
      keyPrefix: this.options.keyPrefix,
    });
  }

  /**
   * What the server lacks of what the configuration needs (`checkServer`), or `undefined`; what works but risks the
   * locks is warned about, and a server that cannot load scripts gets them by `EVAL` from now on.
   */
  async checkServer(): Promise<LockConfigError | undefined> {
    this.gateway.startupCheck();
    const preload = SCRIPTS.map((s) => this.gateway.variant(s));
    const needs = {
      waitForReplicas: this.options.waitForReplicas,
      script: this.gateway.variant(ACQUIRE),
      preload,
      commandTimeoutMs: this.options.commandTimeoutMs,
      keyPrefix: this.options.keyPrefix,
    };
    const report = await checkServer(this.driver, needs);
    if (report.evalOnly) this.gateway.useEval();
    const warn = this.options.warn ?? ((m: string) => this.options.onConnectionError(new Error(m)));
    report.warnings.forEach(warn);
    return report.missing;
  }

  async ping(timeoutMs: number): Promise<StorePing> {
    const [command, subscriber] = await Promise.all([
      timedPing(() => this.driver.send(['PING']), timeoutMs),
      timedPing(() => this.channels.ping(), timeoutMs),
    ]);
    const error = command.error ?? subscriber.error;
    return {
      command: command.ok,
      subscriber: subscriber.ok,
      commandMs: command.ms,
      subscriberMs: subscriber.ms,
      ...(error ? { error } : {}),
    };
  }

  async close(): Promise<void> {
    this.subscriber.close();
    this.stopWatching();
    await Promise.all([this.channels.close(), this.driver.close(this.options.commandTimeoutMs)]);
  }
}

async function timedPing(
  ping: () => Promise<unknown>,
  timeoutMs: number,
): Promise<{ ok: boolean; ms: number; error?: string }> {
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
    return { ok: false, ms: performance.now() - start, error: errorText(err) };
  } finally {
    clearTimeout(timer);
  }
}
