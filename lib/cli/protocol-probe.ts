import { connect } from 'node:net';

/** The first byte of every RESP2 and RESP3 reply. */
const RESP_TYPES = new Set('+-:$*_,#!=(%~>|');

/**
 * After a failed connection: whether `host:port` answers `PING` at all, and whether the answer is Redis's. Resolves
 * with a sentence for the user when the other end speaks something else (an HTTP server, say), `undefined` when it
 * looks like Redis, does not answer within `timeoutMs`, or cannot be reached (the connection's own error says more).
 */
export function probeNotRedis(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answer: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk: Buffer) => done(notRedisAnswer(chunk.toString('latin1'))));
  });
}

/** `undefined` when `answer` starts as a Redis reply does; else what it looks like, for the user. */
export function notRedisAnswer(answer: string): string | undefined {
  if (answer.length === 0 || RESP_TYPES.has(answer[0])) return undefined;
  const shown = [...answer.slice(0, 12)].map((c) => (/^[\u0020-\u007e]$/.test(c) ? c : '.')).join('');
  const like = /^HTTP\/\d/.test(answer) ? ', as an HTTP server does' : '';
  return `it answered "${shown}…"${like}; is --url pointing at the right port?`;
}
