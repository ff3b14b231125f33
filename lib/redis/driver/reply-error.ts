/**
 * An error reply of the server (as opposed to a connection that failed or a call that got no answer), whatever
 * client carried it: its message starts with the server's code (`NOSCRIPT …`, `NOPERM …`, `ERR …`), which
 * `redisErrorCode` reads. ioredis' own `ReplyError` has the same name, so both are told apart from failures alike.
 */
export class ReplyError extends Error {
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'ReplyError';
  }
}

/** Whether `err` is an error reply of the server (a refusal), not a connection failure or a timeout. */
export function isReplyError(err: unknown): err is Error {
  return err instanceof Error && err.name === 'ReplyError';
}
