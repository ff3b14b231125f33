import { errorText } from '../common/error-text.js';
// Errors of a Redis server told apart by their code (the reply's first word), never by their wording, which
// differs between servers and versions.

/**
 * The code of a Redis error reply: its first word (`NOPERM`, `NOSCRIPT`, `READONLY`, `ERR`, …), or undefined when
 * `err` is no error reply. Decisions rest on the code, which every server version spells the same, not on the
 * wording after it, which versions change (Valkey's NOSCRIPT has no "Please use EVAL.", for one).
 */
export function redisErrorCode(err: unknown): string | undefined {
  const message = errorText(err);
  const code = /^([A-Z]{3,})[ :]/.exec(message)?.[1];
  if (code) return code;
  return err instanceof Error && err.name === 'ReplyError' ? 'ERR' : undefined;
}

/** NOSCRIPT, by its code (Redis: `NOSCRIPT No matching script. Please use EVAL.`; Valkey: `… No matching script.`). */
export function isNoScript(err: unknown): boolean {
  return redisErrorCode(err) === 'NOSCRIPT';
}

/**
 * An error reply's message without the arguments Redis quotes back (`unknown command 'EVAL', with args beginning
 * with: '<the script>' …`): no message of the library quotes a script.
 */
export function withoutArguments(err: unknown): string {
  const message = errorText(err);
  return message.replace(/,? with args beginning with:.*$/s, '').trim();
}
