import { hostname } from 'node:os';
import { bounded } from '../../common/async-limits.js';
import type { LockConfigError } from '../../errors/lock-config.error.js';
import { BoundedLockStore } from '../../redis/bounded-lock-store.js';
import type { RedisConnectionInput } from '../../redis/connection.js';
import type { RedisDriver } from '../../redis/driver/redis-driver.js';
import type {
  ConnectionStateChange,
  HolderIdentity,
  LockStore,
  LockStoreFactory,
  ReplicaWaitSettings,
} from '../../store/lock-store.js';
import { QuorumLockStore } from '../../redis/quorum/quorum-lock-store.js';
import { RedisLockStore } from '../../redis/redis-lock-store.js';
import type { PermitStore } from '../../store/permit-store.js';
import { RedisPermitStore } from '../../redis/redis-permit-store.js';
import { StoreRouter } from '../../store/store-router.js';
import type { LockLogger } from '../events/lock-events.js';
import { DEFAULT_REPLICA_WAIT_MS } from '../settings/engine-settings.js';
import type { LockEngineSettings } from '../settings/engine-settings.js';
import { errorText } from '../../common/error-text.js';

/**
 * Why quorum mode has no semaphores (the refusal's message, at call time and, for `@Semaphore` methods, at start-up).
 */
export const QUORUM_HAS_NO_SEMAPHORES =
  'semaphores are not available in quorum mode: masters that each admit `limit` holders admit up to ' +
  'limit x masters / majority holders in all (3 masters, limit 2: 3 holders), so a quorum cannot bound them; ' +
  'use one Redis (standalone, Sentinel or Cluster) for semaphores';

/** How long an idle wake-up subscription is kept, in milliseconds. */
const SUBSCRIPTION_LINGER_MS = 1_000;

/** The store an engine talks to, and who this process is in the holder records. */
export interface EngineStore {
  /** The store, every call bounded (`BoundedLockStore`): locks and semaphores (`StoreRouter`). */
  readonly store: BoundedLockStore;
  /** The semaphores' store, unbounded; `undefined` when there is none (quorum mode: see `noSemaphores`). */
  readonly permits: PermitStore | undefined;
  /** Why this store has no semaphores. */
  readonly noSemaphores: string | undefined;
  /** The same store without the bounds (a key scan reads its connections). */
  readonly backend: LockStore;
  readonly identity: HolderIdentity;
}

/**
 * Builds the engine's store: `factory`'s when given (the memory store), quorum mode when `redis` is an array,
 * otherwise one Redis (standalone, Sentinel or Cluster); always wrapped in `BoundedLockStore`.
 * @throws {LockConfigError} naming `redis` for invalid connection inputs.
 */
export function openEngineStore(
  redis: RedisConnectionInput | readonly RedisConnectionInput[],
  settings: LockEngineSettings,
  logger: LockLogger,
  onConnectionState: (change: ConnectionStateChange) => void,
  factory: LockStoreFactory | undefined,
): EngineStore {
  const identity = { host: hostname(), pid: process.pid, app: settings.appName };
  const context = {
    keyPrefix: settings.keyPrefix,
    identity,
    subscriptionLingerMs: SUBSCRIPTION_LINGER_MS,
    commandTimeoutMs: settings.commandTimeoutMs,
    waitForReplicas: replicaWait(settings),
    onConnectionError: (err: unknown) => logger.warn(`Redis error: ${errorText(err)}`),
    warn: (message: string) => logger.warn(message),
    onConnectionState,
  };
  const inner = factory
    ? factory(context)
    : isQuorum(redis)
      ? new QuorumLockStore(redis, context)
      : new RedisLockStore(redis, context);
  const permits =
    inner instanceof RedisLockStore
      ? new RedisPermitStore(inner, context)
      : (inner as Partial<{ permits(): PermitStore }>).permits?.();
  const router = new StoreRouter(inner, permits);
  const noSemaphores = permits
    ? undefined
    : inner instanceof QuorumLockStore
      ? QUORUM_HAS_NO_SEMAPHORES
      : 'this lock store has no semaphores';
  return {
    store: new BoundedLockStore(router, settings.commandTimeoutMs),
    backend: inner,
    permits,
    noSemaphores,
    identity,
  };
}

/** One line when a connection drops, one when it is back (further errors in between are not logged). */
export function logConnectionChange(logger: LockLogger, change: ConnectionStateChange): void {
  if (change.state === 'lost') {
    logger.warn(
      `Redis ${change.connection} connection lost: ${errorText(change.error)}; reconnecting (further errors are not logged until it is back)`,
    );
    return;
  }
  const message = `Redis ${change.connection} connection restored after ${Math.round(change.downMs ?? 0)} ms`;
  if (logger.log) logger.log(message);
  else logger.warn(message);
}

/** `waitForReplicas` with its defaults, as the store takes it. */
function replicaWait(settings: LockEngineSettings): ReplicaWaitSettings | undefined {
  const wait = settings.waitForReplicas;
  return (
    wait && { replicas: wait.replicas, timeoutMs: wait.timeoutMs ?? DEFAULT_REPLICA_WAIT_MS, aof: wait.aof === true }
  );
}

function isQuorum(
  redis: RedisConnectionInput | readonly RedisConnectionInput[],
): redis is readonly RedisConnectionInput[] {
  return Array.isArray(redis);
}

/**
 * The connections that hold a store's keys, one per independent master (a `Cluster` client stands for all its
 * masters), for a key scan. Empty for a store without Redis (the memory store).
 */
export function scanConnectionsOf(backend: LockStore): readonly RedisDriver[] {
  if (backend instanceof RedisLockStore) return [backend.commandConnection];
  if (backend instanceof QuorumLockStore) return backend.commandConnections;
  return [];
}

/**
 * The start-up check (docs/managed-services.md): asks the server once what the configuration needs of it (scripting,
 * Redis 7.0+, sharded pub/sub on a Cluster, `WAIT` or `WAITAOF` with `waitForReplicas`) and rejects with a
 * `LockConfigError` naming the missing piece and the option to change, instead of failing call by call. A server
 * that does not answer within `timeoutMs` is not held up: a warning says the check was not made. Nothing to check for
 * a store without Redis (the memory store).
 */
export async function checkEngineServer(backend: LockStore, timeoutMs: number, logger: LockLogger): Promise<void> {
  const check = (backend as Partial<{ checkServer(): Promise<LockConfigError | undefined> }>).checkServer;
  if (!check) return;
  let missing: LockConfigError | undefined;
  try {
    missing = await bounded(check.call(backend), timeoutMs, 'the start-up check of the server');
  } catch (err) {
    logger.warn(`could not check what the Redis server supports: ${errorText(err)}; each call finds out instead`);
    return;
  }
  if (missing) throw missing;
}
