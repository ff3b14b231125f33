import { LockError } from '../errors/lock.error.js';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { LockOperation, LockUnavailableReason } from '../errors/lock-unavailable.error.js';
import { NotReplicated } from './replica-wait.js';

/** A command that got no answer within the command timeout (what `RedisLockStore.describeFailure` is told). */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/** What the classification of a Redis failure gives. */
export interface RedisFailure {
  readonly reason: LockUnavailableReason;
  /** What went wrong, in words, for the error message. */
  readonly detail: string;
  /** For ACL denials: the command or channel right the Redis user lacks. */
  readonly missing?: string;
}

/** Finds the source of a script by SHA, so an ACL denial inside it can name the command on the failing line. */
export type ScriptSourceLookup = (sha: string) => string | undefined;

/**
 * Classifies an error of a Redis command: an ACL denial (naming the missing command, key or channel right), another
 * error reply (`READONLY`, `OOM`, `BUSY`, …: refused), or a connection failure (unreachable).
 */
export function classifyRedisError(err: unknown, scripts: ScriptSourceLookup, keyPrefix: string): RedisFailure {
  const message = err instanceof Error ? err.message : String(err);
  const isReply = err instanceof Error && err.name === 'ReplyError';
  if (isReply || /^[A-Z]{3,}[ :]/.test(message)) {
    const denial = describeDenial(message, scripts, keyPrefix);
    if (denial) return { reason: 'permission-denied', ...denial };
    return { reason: 'refused', detail: `Redis refused the command: ${message}` };
  }
  return { reason: 'unreachable', detail: `no working connection to Redis: ${message}` };
}

/** A `LockUnavailableError` for `failure` (an error, or `TIMED_OUT` after `timeoutMs`). */
export function unavailable(
  failure: unknown,
  operation: LockOperation,
  key: string | undefined,
  context: { timeoutMs: number; connected: boolean; scripts: ScriptSourceLookup; keyPrefix: string },
): LockError {
  if (failure instanceof LockError) return failure;
  if (failure instanceof NotReplicated) {
    // An ACL user without WAIT is a permission to grant, not a replication problem.
    if (
      failure.refused &&
      classifyRedisError(failure.refused, context.scripts, context.keyPrefix).reason === 'permission-denied'
    ) {
      return unavailable(failure.refused, operation, key, context);
    }
    const undone =
      operation === 'acquire'
        ? '; the grant was undone'
        : operation === 'renew' || operation === 'extend'
          ? '; the lease is counted as not renewed'
          : '';
    return new LockUnavailableError({
      key,
      operation,
      reason: 'not-replicated',
      detail: failure.message + undone,
      cause: failure.refused,
    });
  }
  if (failure === TIMED_OUT) {
    const detail = context.connected
      ? `no answer within commandTimeoutMs (${context.timeoutMs} ms): Redis is paused, overloaded or cut off`
      : `no connection to Redis within commandTimeoutMs (${context.timeoutMs} ms): it is down or unreachable`;
    return new LockUnavailableError({ key, operation, reason: context.connected ? 'timeout' : 'unreachable', detail });
  }
  const { reason, detail, missing } = classifyRedisError(failure, context.scripts, context.keyPrefix);
  return new LockUnavailableError({ key, operation, reason, detail, missing, cause: failure });
}

const ACL_RULE_HINT = 'see "Redis permissions" in the README for the ACL rule the library needs';

function describeDenial(
  message: string,
  scripts: ScriptSourceLookup,
  keyPrefix: string,
): { detail: string; missing: string } | undefined {
  const m = /^NOPERM .*run the '([^']+)' command/i.exec(message);
  if (m) return denial(m[1].toUpperCase(), `the Redis user may not run ${m[1].toUpperCase()}`);
  if (/^NOPERM .*channel/i.test(message)) {
    return denial(`channels &${keyPrefix}*`, `the Redis user may not subscribe to the lock channels (&${keyPrefix}*)`);
  }
  if (/^NOPERM .*key/i.test(message))
    return denial(`keys ~${keyPrefix}*`, `the Redis user may not access the lock keys (~${keyPrefix}*)`);
  if (!/user executing the script can't/i.test(message)) return undefined;
  if (/publish to the channel/i.test(message)) {
    return denial(`channels &${keyPrefix}*`, `the Redis user may not publish to the lock channels (&${keyPrefix}*)`);
  }
  if (/access at least one of the keys/i.test(message)) {
    return denial(`keys ~${keyPrefix}*`, `the Redis user may not access the lock keys (~${keyPrefix}*)`);
  }
  const command = commandOnScriptLine(message, scripts);
  return command
    ? denial(command, `the Redis user may not run ${command} (called by the library's Lua script)`)
    : denial(
        'a command used by the lock scripts',
        `the Redis user may not run a command the lock scripts use: ${message}`,
      );
}

function denial(missing: string, detail: string): { detail: string; missing: string } {
  return { missing, detail: `permission denied: ${detail}; ${ACL_RULE_HINT}` };
}

/** `…script: <sha>, on @user_script:<line>.` → the command that line of that script calls. */
function commandOnScriptLine(message: string, scripts: ScriptSourceLookup): string | undefined {
  const m = /script: ([0-9a-f]{40}), on @user_script:(\d+)/i.exec(message);
  if (!m) return undefined;
  const line = scripts(m[1])?.split('\n')[Number(m[2]) - 1];
  if (line === undefined) return undefined;
  const commands = [...line.matchAll(/redis\.p?call\('([A-Za-z]+)'/g)].map((c) => c[1].toUpperCase());
  return commands.length > 0 ? [...new Set(commands)].join(' or ') : undefined;
}
