import { performance } from 'node:perf_hooks';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The one polling helper: checks `check` every 5 ms until it returns true; throws after `timeoutMs` naming `what`.
 * Use it to wait for state the test can see (instead of sleeping and hoping).
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 3_000,
  what = 'condition',
): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

/** A promise plus its resolver, for gates between concurrent tasks. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Tracks whether a promise has settled, without consuming its rejection. */
export function track<T>(promise: Promise<T>): {
  readonly settled: boolean;
  readonly at: number | undefined;
  readonly promise: Promise<T>;
} {
  const state = { settled: false, at: undefined as number | undefined, promise };
  const done = () => {
    state.settled = true;
    state.at = performance.now();
  };
  promise.then(done, done);
  return state;
}

/** Rejection reason of `promise` (fails if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** Resolves with the reason once `signal` aborts; rejects after `timeoutMs`. */
export function abortedWithin(signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${timeoutMs} ms`)), timeoutMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}
