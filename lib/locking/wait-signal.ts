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
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.resolve = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.resolve = done;
    });
  }
}
