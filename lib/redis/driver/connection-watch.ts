import { performance } from 'node:perf_hooks';
import type { EventEmitter } from 'node:events';
import type { ConnectionStateChange } from '../../store/lock-store.js';
import type { ConnectionEvent } from './redis-driver.js';

/** What `watchEvents` needs of an ioredis-like connection: its events and its status. */
interface Watched extends EventEmitter {
  readonly status: string;
}

/**
 * The `down`/`up` events of an ioredis-family connection: `down` on an error (when `errors`) or a close while up (a
 * close on purpose is not an outage), `up` on `ready`. Returns what removes the listeners.
 */
export function watchEvents(
  c: Watched,
  listener: (event: ConnectionEvent) => void,
  { errors }: { readonly errors: boolean },
): () => void {
  const onError = (error: unknown) => listener({ state: 'down', error });
  const onClose = () => {
    if (c.status !== 'end' && (c as unknown as { manuallyClosing?: boolean }).manuallyClosing !== true) {
      listener({ state: 'down', error: new Error('connection closed') });
    }
  };
  const onReady = () => listener({ state: 'up' });
  if (errors) c.on('error', onError);
  c.on('close', onClose);
  c.on('ready', onReady);
  return () => {
    c.off('error', onError);
    c.off('close', onClose);
    c.off('ready', onReady);
  };
}

/**
 * Turns a connection's `down`/`up` events into one report per outage: the first `down` after it was up (`lost`),
 * then nothing until it is up again (`restored`, with how long it was down). Clients report an error per reconnect
 * attempt; this makes them one line when the connection drops and one when it is back.
 */
export function outageReporter(
  connection: ConnectionStateChange['connection'],
  report: (change: ConnectionStateChange) => void,
): (event: ConnectionEvent) => void {
  let downSince: number | undefined;
  return (event) => {
    if (event.state === 'down') {
      if (downSince !== undefined) return;
      downSince = performance.now();
      report({ connection, state: 'lost', error: event.error });
      return;
    }
    if (downSince === undefined) return;
    const downMs = performance.now() - downSince;
    downSince = undefined;
    report({ connection, state: 'restored', downMs });
  };
}
