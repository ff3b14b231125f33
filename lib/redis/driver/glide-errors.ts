import { ReplyError } from './reply-error.js';

/**
 * The server's codes behind the error kinds GLIDE names in its messages ("An error was signalled by the server: -
 * NoScriptError: No matching script."): GLIDE drops the code and puts its own kind in front.
 */
const CODES: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  PermissionDenied: 'NOPERM',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  Moved: 'MOVED',
  Ask: 'ASK',
  NotBusy: 'NOTBUSY',
  TypeError: 'WRONGTYPE',
  AuthenticationFailed: 'WRONGPASS',
};

/** Whether a GLIDE call failed for want of a connection (closed, not connected, no answer in time). */
export function isGlideConnectionFailure(err: unknown): boolean {
  const name = (err as { constructor?: { name?: string } } | undefined)?.constructor?.name;
  return name === 'ConnectionError' || name === 'ClosingError' || name === 'TimeoutError';
}

/**
 * `err` as the library reads errors: an error reply of the server becomes a `ReplyError` whose message starts with
 * the server's code again (`NOSCRIPT No matching script.`, `NOPERM this user has no permissions …`); anything else
 * (a connection failure, a timeout) is returned as it is.
 */
export function glideError(err: unknown): unknown {
  const name = (err as { constructor?: { name?: string } } | undefined)?.constructor?.name;
  if (!(err instanceof Error) || name !== 'RequestError') return err;
  const signalled = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/.exec(err.message);
  if (signalled) {
    const code = CODES[signalled[1]] ?? signalled[1].toUpperCase();
    return new ReplyError(`${code} ${signalled[2]}`, { cause: err });
  }
  // An error code GLIDE does not know comes through as "CODE: text".
  const custom = /^([A-Z][A-Z_]{2,}): ([\s\S]*)$/.exec(err.message);
  if (custom) return new ReplyError(`${custom[1]} ${custom[2]}`, { cause: err });
  return err;
}
