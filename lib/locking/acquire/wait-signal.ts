/**
 * A one-shot wake-up for a waiting acquisition. `fire()` before `wait()` is remembered (`fired`), so a wake-up
 * that arrives while the waiter is busy talking to Redis is never lost.
 */
export class WaitSignal {
  private resolve: (() => void) | undefined;
  fired = false;

  reset(): void {
    this.fired = false;
  }

  fire(): void {
    this.fired = true;
    const r = this.resolve;
    this.resolve = undefined;
    r?.();
  }

  /** Resolves when fired, after `ms` milliseconds, or when `signal` aborts, whichever is first. */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.fired || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let stopListening: (() => void) | undefined;
      const done = () => {
        clearTimeout(timer);
        stopListening?.();
        this.resolve = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (signal) stopListening = onAbort(signal, done);
      this.resolve = done;
    });
  }
}

/** The callbacks waiting on each caller signal, behind one `abort` listener per signal. */
const abortCallbacks = new WeakMap<
  AbortSignal,
  { readonly callbacks: Set<() => void>; readonly listener: () => void }
>();

/**
 * Calls `callback` once when `signal` aborts; returns the function that stops listening. However many waiters share
 * one signal (50 acquisitions with one request's signal), the signal has a single listener, removed with the last
 * waiter, so Node never warns about a possible listener leak (`MaxListenersExceededWarning`).
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let entry = abortCallbacks.get(signal);
  if (!entry) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      abortCallbacks.delete(signal);
      for (const cb of [...callbacks]) cb();
    };
    entry = { callbacks, listener };
    abortCallbacks.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callbacks, listener } = entry;
  callbacks.add(callback);
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0 || abortCallbacks.get(signal)?.listener !== listener) return;
    abortCallbacks.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}
