import { LockError } from '../errors/lock.error.js';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import type { LockOperation, LockUnavailableReason } from '../errors/lock-unavailable.error.js';
import { TIMED_OUT } from '../store/timed-out.js';
import { NotReplicated } from './replica-wait.js';
import { redisErrorCode, withoutArguments } from './error-code.js';
import { errorText } from '../common/error-text.js';

export { redisErrorCode } from './error-code.js';

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
  const message = errorText(err);
  const code = redisErrorCode(err);
  if (code === undefined) return { reason: 'unreachable', detail: `no working connection to Redis: ${message}` };
  const denial =
    code === 'NOPERM'
      ? describeDenial(message, scripts, keyPrefix)
      : code === 'ERR' && isDenialInScript(message)
        ? describeDenial(message, scripts, keyPrefix)
        : undefined;
  if (denial) return { reason: 'permission-denied', ...denial };
  return { reason: 'refused', detail: `Redis refused the command: ${withoutArguments(message)}` };
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

/**
 * An ACL denial of a command a script calls. Every server reports it with the generic code ERR (its scripting layer
 * prefixes ERR to a reply it builds itself), so here alone the wording tells: Redis 7.0 says "The user executing the
 * script can't …", Redis 7.2+ and Valkey say "ACL failure in script: …". (A denial of a key the script declares is
 * checked before the script runs, and is a NOPERM.)
 */
function isDenialInScript(message: string): boolean {
  return /^ERR (ACL failure in script|The user executing the script can't)/i.test(message);
}

/** What the denial `message` (a NOPERM, or an ACL denial inside a script) says the Redis user lacks. */
function describeDenial(message: string, scripts: ScriptSourceLookup, keyPrefix: string): Denial {
  const inScript = !message.startsWith('NOPERM');
  const named = /run the '([^']+)' command/i.exec(message)?.[1].toUpperCase();
  const caller = inScript ? " (called by the library's Lua script)" : '';
  if (named) return denial(named, `the Redis user may not run ${named}${caller}`);
  if (/channel/i.test(message)) {
    const what = inScript ? 'publish to' : 'subscribe to';
    return denial(`channels &${keyPrefix}*`, `the Redis user may not ${what} the lock channels (&${keyPrefix}*)`);
  }
  if (/\bkeys?\b/i.test(message))
    return denial(`keys ~${keyPrefix}*`, `the Redis user may not access the lock keys (~${keyPrefix}*)`);
  const command = inScript ? commandOnScriptLine(message, scripts) : undefined;
  return command
    ? denial(command, `the Redis user may not run ${command}${caller}`)
    : denial(
        'a command used by the lock scripts',
        `the Redis user may not run a command the lock scripts use: ${message}`,
      );
}

interface Denial {
  readonly detail: string;
  readonly missing: string;
}

function denial(missing: string, detail: string): Denial {
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
