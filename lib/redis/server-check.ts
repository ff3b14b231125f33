import { LockConfigError } from '../errors/lock-config.error.js';
import type { ReplicaWaitSettings } from '../store/lock-store.js';
import type { DriverNode, RedisDriver } from './driver/redis-driver.js';
import { isReplyError } from './driver/reply-error.js';
import { redisErrorCode } from './error-code.js';
import type { LuaScript } from './scripts/lua-script.js';

/** What the configuration needs of the server, beyond what every deployment needs (scripting, Redis 7.0+). */
export interface ServerNeeds {
  /** `waitForReplicas`: `WAIT` (or `WAITAOF` with `aof`) must be accepted. */
  readonly waitForReplicas?: ReplicaWaitSettings;
  /** A script the library sends, loaded on each node (`SCRIPT LOAD`): proves scripting, and saves a NOSCRIPT later. */
  readonly script: LuaScript;
  /**
   * The other scripts the library sends, loaded on each node once the check passed (best effort): the first call of
   * each then needs no NOSCRIPT round trip (which some clients also log, Valkey GLIDE at WARN).
   */
  readonly preload?: readonly LuaScript[];
}

/** Oldest Redis the scripts run on (`PEXPIRETIME`, `ZADD … GT`, sharded pub/sub): 7.0. Valkey reports 7.2.4+. */
const MIN_MAJOR = 7;

/**
 * Asks every master of `client` once what it supports, and returns a `LockConfigError` naming the first missing
 * piece and the option to change: no scripting engine, a server older than Redis 7.0, sharded pub/sub missing on a
 * Cluster, `WAIT` (or `WAITAOF`) refused with `waitForReplicas` on. `undefined` when nothing is missing. A question
 * the server refuses for want of an ACL right (NOPERM) proves nothing missing: it is not held against the server.
 * Rejects when a node does not answer (the caller decides what an unreachable server means at start-up).
 */
export async function checkServer(driver: RedisDriver, needs: ServerNeeds): Promise<LockConfigError | undefined> {
  if (driver.cluster && !(await driver.whenReady(10_000))) throw new Error('the Cluster did not become ready');
  for (const node of driver.masters()) {
    const missing = await checkNode(node, driver.cluster, needs);
    if (missing) return missing;
  }
  await Promise.allSettled(
    driver.masters().flatMap((node) => (needs.preload ?? []).map((s) => node.send(['SCRIPT', 'LOAD', s.source]))),
  );
  return undefined;
}

async function checkNode(node: DriverNode, cluster: boolean, needs: ServerNeeds): Promise<LockConfigError | undefined> {
  const where = node.label;
  const version = await refusedAsUndefined(node.send(['INFO', 'server']) as Promise<string>);
  const major = version && Number(/^redis_version:(\d+)/m.exec(version)?.[1]);
  if (major && major < MIN_MAJOR) {
    const found = /^redis_version:(\S+)/m.exec(version ?? '')?.[1];
    return new LockConfigError(
      `invalid redis: the server at ${where} is Redis ${found}; the library needs Redis 7.0 or newer (or Valkey 7.2+)`,
      'redis',
    );
  }
  const loaded = await answer(node.send(['SCRIPT', 'LOAD', needs.script.source]));
  if (loaded instanceof Error && redisErrorCode(loaded) !== 'NOPERM') {
    return new LockConfigError(
      `invalid redis: the server at ${where} cannot run Lua scripts (SCRIPT LOAD: ${loaded.message}); every lock ` +
        'operation is one script: use a server with scripting (Redis 7.0+, Valkey 7.2+ built with Lua)',
      'redis',
    );
  }
  if (cluster) {
    const info = await refusedAsUndefined(node.send(['COMMAND', 'INFO', 'spublish']) as Promise<unknown[]>);
    if (info && !Array.isArray(info[0])) {
      return new LockConfigError(
        `invalid redis: the Cluster node ${where} has no sharded pub/sub (SPUBLISH), which wakes waiters on a ` +
          'Cluster: use Redis 7.0+ or Valkey 7.2+ on every node',
        'redis',
      );
    }
  }
  const wait = needs.waitForReplicas;
  if (wait) {
    const command = wait.aof ? 'WAITAOF' : 'WAIT';
    const reply = await answer(node.send(wait.aof ? ['WAITAOF', 0, 0, 0] : ['WAIT', 0, 0]));
    if (reply instanceof Error && redisErrorCode(reply) !== 'NOPERM') {
      return new LockConfigError(
        `invalid waitForReplicas: the server at ${where} refused ${command} (${reply.message}): ` +
          (wait.aof
            ? 'WAITAOF needs Redis 7.2+ or Valkey 7.2+; set waitForReplicas.aof to false (WAIT), or turn waitForReplicas off'
            : 'a proxy or a managed service without replica acknowledgement; turn waitForReplicas off for it'),
        wait.aof ? 'waitForReplicas.aof' : 'waitForReplicas',
      );
    }
  }
  return undefined;
}

/** The reply, or the error reply as a value; rejects only when the connection failed (no answer at all). */
async function answer<T>(command: Promise<T>): Promise<T | Error> {
  try {
    return await command;
  } catch (err) {
    if (isReplyError(err)) return err;
    throw err;
  }
}

/** The reply, or `undefined` when the server refused the question. */
async function refusedAsUndefined<T>(command: Promise<T>): Promise<T | undefined> {
  const reply = await answer(command);
  return reply instanceof Error ? undefined : reply;
}
