import { hostname } from 'node:os';
import { BoundedLockStore } from '../redis/bounded-lock-store.js';
import type { RedisClient, RedisConnectionInput } from '../redis/connection.js';
import type { ConnectionStateChange, HolderIdentity, LockStore, LockStoreFactory, ReplicaWaitSettings } from '../redis/lock-store.js';
import { QuorumLockStore } from '../redis/quorum-lock-store.js';
import { RedisLockStore } from '../redis/redis-lock-store.js';
import { errorText } from './lock-events.js';
import type { LockLogger } from './lock-events.js';
import { DEFAULT_REPLICA_WAIT_MS } from './lock-options.js';
import type { LockEngineSettings } from './lock-options.js';

/** How long an idle wake-up subscription is kept, in milliseconds. */
const SUBSCRIPTION_LINGER_MS = 1_000;

/** The store an engine talks to, and who this process is in the holder records. */
export interface EngineStore {
  /** The store, every call bounded (`BoundedLockStore`). */
  readonly store: LockStore;
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
    onConnectionState,
  };
  const inner = factory ? factory(context) : isQuorum(redis) ? new QuorumLockStore(redis, context) : new RedisLockStore(redis, context);
  return { store: new BoundedLockStore(inner, settings.commandTimeoutMs), backend: inner, identity };
}

/**
 * One line when a connection drops, one when it is back (further errors in between are not logged). Returns
 * whether the wake-up connection came back: waiters must then retry at once (a wake-up may have been lost).
 */
export function logConnectionChange(logger: LockLogger, change: ConnectionStateChange): boolean {
  if (change.state === 'lost') {
    logger.warn(`Redis ${change.connection} connection lost: ${errorText(change.error)}; reconnecting (further errors are not logged until it is back)`);
    return false;
  }
  const message = `Redis ${change.connection} connection restored after ${Math.round(change.downMs ?? 0)} ms`;
  if (logger.log) logger.log(message);
  else logger.warn(message);
  return change.connection === 'subscriber';
}

/** `waitForReplicas` with its defaults, as the store takes it. */
function replicaWait(settings: LockEngineSettings): ReplicaWaitSettings | undefined {
  const wait = settings.waitForReplicas;
  return wait && { replicas: wait.replicas, timeoutMs: wait.timeoutMs ?? DEFAULT_REPLICA_WAIT_MS };
}

function isQuorum(redis: RedisConnectionInput | readonly RedisConnectionInput[]): redis is readonly RedisConnectionInput[] {
  return Array.isArray(redis);
}

/**
 * The connections that hold a store's keys, one per independent master (a `Cluster` client stands for all its
 * masters), for a key scan. Empty for a store without Redis (the memory store).
 */
export function scanConnectionsOf(backend: LockStore): readonly RedisClient[] {
  if (backend instanceof RedisLockStore) return [backend.commandConnection];
  if (backend instanceof QuorumLockStore) return backend.commandConnections;
  return [];
}
