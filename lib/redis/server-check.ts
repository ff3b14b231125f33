import { LockConfigError } from '../errors/lock-config.error.js';
import type { ReplicaWaitSettings } from '../store/lock-store.js';
import type { DriverNode, RedisDriver } from './driver/redis-driver.js';
import { isReplyError } from './driver/reply-error.js';
import { redisErrorCode, withoutArguments } from './error-code.js';
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
  /**
   * `keyPrefix`: the scripting probes name a key under it (never written), so that an ACL key pattern for the locks
   * admits it and a service that refuses scripts without keys runs them.
   */
  readonly keyPrefix?: string;
  /** `commandTimeoutMs`: a client whose own timeout on a command is shorter is named in a warning. */
  readonly commandTimeoutMs?: number;
}

/** What the start-up check found. */
export interface ServerReport {
  /** The first missing piece the configuration needs, naming the option or the right to change; or `undefined`. */
  readonly missing?: LockConfigError;
  /** What works but risks the locks or their bounds, one line each (a `maxmemory-policy` that evicts, a timeout). */
  readonly warnings: readonly string[];
  /** The server runs scripts but cannot load them (`SCRIPT LOAD` renamed away or refused): send them with `EVAL`. */
  readonly evalOnly: boolean;
}

/** Oldest Redis the scripts run on (`PEXPIRETIME`, `ZADD … GT`, sharded pub/sub): 7.0. Valkey reports 7.2.4+. */
const MIN_MAJOR = 7;

/** A SHA no script has: `EVALSHA` of it answers NOSCRIPT where the user may run it, NOPERM where not. */
const NO_SUCH_SCRIPT = '0'.repeat(40);

/**
 * Asks every master of `client` once what it supports. `missing`: a `LockConfigError` naming the first missing piece
 * and what to change: no script runs at all, an ACL user without `EVALSHA`/`EVAL` (with the `ACL SETUSER` rule that
 * grants them), a server older than Redis 7.0, sharded pub/sub missing on a Cluster, `WAIT` (or `WAITAOF`) refused
 * with `waitForReplicas` on. `warnings`: a `maxmemory-policy` that can evict lock keys (one line for every master that
 * has one), a client whose own command timeout is shorter than `commandTimeoutMs`, the `EVAL` fallback. Another
 * question the server refuses for want of an ACL right (NOPERM: `INFO`, `SCRIPT LOAD`, `COMMAND`) proves nothing
 * missing: it is not held against the server. No message quotes a script (Redis quotes the arguments of an unknown
 * command back). Rejects when a node does not answer (the caller decides what an unreachable server means).
 */
export async function checkServer(driver: RedisDriver, needs: ServerNeeds): Promise<ServerReport> {
  if (driver.cluster && !(await driver.whenReady(10_000))) throw new Error('the Cluster did not become ready');
  const warnings = clientTimeoutWarning(driver, needs.commandTimeoutMs);
  const evicting: string[] = [];
  let evalOnly = false;
  for (const node of driver.masters()) {
    const found = await checkNode(node, driver.cluster, needs);
    if (found.missing) return { missing: found.missing, warnings, evalOnly };
    if (found.evicting) evicting.push(`${node.label} (maxmemory-policy ${found.evicting})`);
    if (found.evalOnly && !evalOnly) {
      evalOnly = true;
      warnings.push(
        `the server at ${node.label} has no SCRIPT LOAD (${found.evalOnly}): the library uses the EVAL fallback, ` +
          'sending each script whole on every call (more bytes per call, and Redis 8 may evict scripts sent by EVAL); ' +
          'restore SCRIPT (or grant +script|load) to send them by SHA',
      );
    }
  }
  if (evicting.length > 0) {
    warnings.push(
      `Redis may evict lock keys under memory pressure: ${evicting.join(', ')}; a lock key evicted is a lock lost ` +
        'without notice (another caller is granted it while its holder still works): set maxmemory-policy noeviction ' +
        'on the server that holds the locks (every volatile-* policy evicts them too: they have a TTL)',
    );
  }
  if (!evalOnly) {
    await Promise.allSettled(
      driver.masters().flatMap((node) => (needs.preload ?? []).map((s) => node.send(['SCRIPT', 'LOAD', s.source]))),
    );
  }
  return { warnings, evalOnly };
}

interface NodeFindings {
  readonly missing?: LockConfigError;
  /** The eviction policy, when it can evict lock keys (`allkeys-*`, `volatile-*` with a `maxmemory`). */
  readonly evicting?: string;
  /** Why scripts cannot be loaded (the server's error, its arguments left out), when `EVAL` still runs them. */
  readonly evalOnly?: string;
}

async function checkNode(node: DriverNode, cluster: boolean, needs: ServerNeeds): Promise<NodeFindings> {
  const where = node.label;
  const version = await refusedAsUndefined(node.send(['INFO', 'server']) as Promise<string>);
  const major = version && Number(/^redis_version:(\d+)/m.exec(version)?.[1]);
  if (major && major < MIN_MAJOR) {
    const found = /^redis_version:(\S+)/m.exec(version ?? '')?.[1];
    return {
      missing: new LockConfigError(
        `invalid redis: the server at ${where} is Redis ${found}; the library needs Redis 7.0 or newer (or Valkey 7.2+)`,
        'redis',
      ),
    };
  }
  const scripting = await checkScripting(node, needs.script, needs.keyPrefix ?? '');
  if (scripting.missing) return scripting;
  if (cluster) {
    const info = await refusedAsUndefined(node.send(['COMMAND', 'INFO', 'spublish']) as Promise<unknown[]>);
    if (info && !Array.isArray(info[0])) {
      return {
        missing: new LockConfigError(
          `invalid redis: the Cluster node ${where} has no sharded pub/sub (SPUBLISH), which wakes waiters on a ` +
            'Cluster: use Redis 7.0+ or Valkey 7.2+ on every node',
          'redis',
        ),
      };
    }
  }
  const wait = needs.waitForReplicas;
  if (wait) {
    const command = wait.aof ? 'WAITAOF' : 'WAIT';
    const reply = await answer(node.send(wait.aof ? ['WAITAOF', 0, 0, 0] : ['WAIT', 0, 0]));
    if (reply instanceof Error && redisErrorCode(reply) !== 'NOPERM') {
      return {
        missing: new LockConfigError(
          `invalid waitForReplicas: the server at ${where} refused ${command} (${withoutArguments(reply)}): ` +
            (wait.aof
              ? 'WAITAOF needs Redis 7.2+ or Valkey 7.2+; set waitForReplicas.aof to false (WAIT), or turn waitForReplicas off'
              : 'a proxy or a managed service without replica acknowledgement; turn waitForReplicas off for it'),
          wait.aof ? 'waitForReplicas.aof' : 'waitForReplicas',
        ),
      };
    }
  }
  const memory = await refusedAsUndefined(node.send(['INFO', 'memory']) as Promise<string>);
  return { ...scripting, evicting: evictionPolicy(typeof memory === 'string' ? memory : undefined) };
}

/**
 * Whether scripts run on `node`, and how: loaded (`SCRIPT LOAD`) and run by SHA, or only whole by `EVAL` (the
 * `SCRIPT` command renamed away, as some proxies and hardened servers do). `EVALSHA` and `EVAL` are asked in ways
 * that change nothing, with one key under the key prefix (ElastiCache refuses a script without keys; an ACL key
 * pattern for the locks admits it): a SHA no script has (NOSCRIPT where the user may run it), and `return 1`.
 */
async function checkScripting(node: DriverNode, script: LuaScript, keyPrefix: string): Promise<NodeFindings> {
  const probeKey = `${keyPrefix}{start-up check}`;
  const loaded = await answer(node.send(['SCRIPT', 'LOAD', script.source]));
  const bySha = await answer(node.send(['EVALSHA', NO_SUCH_SCRIPT, 1, probeKey]));
  const whole = await answer(node.send(['EVAL', 'return 1', 1, probeKey]));
  const denied = (
    [
      ['EVALSHA', bySha],
      ['EVAL', whole],
    ] as const
  ).filter(([, reply]) => presence(reply) === 'denied');
  if (denied.length > 0) {
    const user = await answer(node.send(['ACL', 'WHOAMI']));
    const name = typeof user === 'string' ? user : '<user>';
    const rights = denied.map(([command]) => command);
    if (denied.every(([, reply]) => /\bkeys?\b/i.test(withoutArguments(reply)))) {
      return {
        missing: new LockConfigError(
          `invalid redis: the Redis user "${name}" at ${node.label} may not access the lock keys ` +
            `(${withoutArguments(denied[0][1])}): grant them with ACL SETUSER ${name} ~${keyPrefix}*`,
          'redis',
        ),
      };
    }
    return {
      missing: new LockConfigError(
        `invalid redis: the Redis user "${name}" at ${node.label} may not run ${rights.join(', ')} ` +
          `(${withoutArguments(denied[0][1])}): every lock operation is a Lua script; grant the right with ` +
          `ACL SETUSER ${name} ${rights.map((r) => `+${r.toLowerCase()}`).join(' ')} (or +@scripting)`,
        'redis',
      ),
    };
  }
  if (presence(loaded) === 'runs' && presence(bySha) !== 'missing') return {};
  if (presence(whole) === 'missing') {
    const why = loaded instanceof Error ? loaded : bySha;
    return {
      missing: new LockConfigError(
        `invalid redis: the server at ${node.label} cannot run Lua scripts (${withoutArguments(why)}); every lock ` +
          'operation is one script: use a server with scripting (Redis 7.0+, Valkey 7.2+ built with Lua)',
        'redis',
      ),
    };
  }
  const why =
    loaded instanceof Error ? `SCRIPT LOAD: ${withoutArguments(loaded)}` : `EVALSHA: ${withoutArguments(bySha)}`;
  return { evalOnly: why };
}

/**
 * What a reply says of its command: it `runs` (an answer, NOSCRIPT, or a redirection to the key's node), the user is
 * `denied` it (NOPERM), the server has no such command (`missing`: renamed away, or no scripting engine), or another
 * refusal that proves neither (`unknown`, not held against the server).
 */
function presence(reply: unknown): 'runs' | 'denied' | 'missing' | 'unknown' {
  if (!(reply instanceof Error)) return 'runs';
  const code = redisErrorCode(reply);
  if (code === 'NOPERM') return 'denied';
  if (code === 'NOSCRIPT' || code === 'MOVED' || code === 'ASK') return 'runs';
  // Redis and Valkey both word it so; the code alone (ERR) would not tell it from any other refusal.
  return /^ERR unknown command\b/i.test(reply.message) ? 'missing' : 'unknown';
}

/** `allkeys-*` or `volatile-*` with a `maxmemory` set (without one the server never evicts); `undefined` otherwise. */
function evictionPolicy(info: string | undefined): string | undefined {
  if (!info) return undefined;
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  const limit = Number(/^maxmemory:(\d+)/m.exec(info)?.[1] ?? 0);
  return policy && /^(allkeys|volatile)-/.test(policy) && limit > 0 ? policy : undefined;
}

/**
 * A warning when the client's own bound on one command (GLIDE's `requestTimeout`, node-redis 6's command timeout) is
 * shorter than `commandTimeoutMs`: a slow call would fail at the client's bound, not the library's.
 */
function clientTimeoutWarning(driver: RedisDriver, commandTimeoutMs: number | undefined): string[] {
  const own = driver.clientTimeout;
  if (!own || commandTimeoutMs === undefined || own.ms >= commandTimeoutMs) return [];
  return [
    `the ${driver.client} client's ${own.name} (${own.ms} ms) is shorter than commandTimeoutMs (${commandTimeoutMs} ms): ` +
      `a call slower than ${own.ms} ms fails at the client's bound instead of the library's; set ${own.setting} to at ` +
      `least ${commandTimeoutMs}, or commandTimeoutMs to at most ${own.ms}`,
  ];
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
