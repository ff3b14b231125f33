// The worker's eyes: one timer samples every handle the worker holds (what `isHeld`, `state` and `signal` tell the
// caller right now) and logs each sample, and each handle's announced changes are logged as they come.
import type { HistoryLog, ObservedState } from './history-events.js';
import { now } from './history-events.js';
import type { SeededRandom } from './seeded-random.js';

/** What a handle tells its caller; read in this order. */
export interface Probe {
  isHeld(): boolean;
  state(): ObservedState;
  signal(): AbortSignal;
}

/** The name of an abort reason: `LockLostError:lease-expired`, `LockClosedError`. */
export function reasonName(reason: unknown): string {
  if (reason instanceof Error) {
    const detail = (reason as { reason?: unknown }).reason;
    return typeof detail === 'string' ? `${reason.name}:${detail}` : reason.name;
  }
  return String(reason);
}

export class Observer {
  private readonly tracked = new Map<string, Probe>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly log: HistoryLog,
    private readonly random: SeededRandom,
    private readonly sampleMs: number,
  ) {}

  /** Samples `hold` now and then on every tick until `untrack`; logs its announced state changes meanwhile. */
  track(hold: string, probe: Probe, onStateChange?: (listener: (state: string) => void) => () => void): void {
    this.tracked.set(hold, probe);
    this.sample(hold, probe);
    const signal = probe.signal();
    if (!signal.aborted) {
      signal.addEventListener('abort', () =>
        this.log.log({ e: 'state', hold, state: 'aborted', reason: reasonName(signal.reason) }),
      );
    }
    onStateChange?.((state) => this.log.log({ e: 'state', hold, state }));
    this.schedule();
  }

  /** Stops sampling `hold` (call before releasing it: a release is the caller's own decision). */
  untrack(hold: string): void {
    this.tracked.delete(hold);
  }

  get size(): number {
    return this.tracked.size;
  }

  /** Stops the timer (the process is about to exit). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    const delay = this.sampleMs * (0.5 + this.random.next());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      for (const [hold, probe] of this.tracked) this.sample(hold, probe);
      if (this.tracked.size > 0) this.schedule();
    }, delay);
  }

  private sample(hold: string, probe: Probe): void {
    // The time is taken before the reads: what they say held at `t` or later.
    const t = now();
    try {
      const isHeld = probe.isHeld();
      const state = probe.state();
      const signal = probe.signal();
      const aborted = signal.aborted;
      this.log.log(
        { e: 'obs', hold, isHeld, state, aborted, ...(aborted ? { reason: reasonName(signal.reason) } : {}) },
        t,
      );
    } catch (err) {
      this.log.log({ e: 'state', hold, state: 'probe-error', reason: reasonName(err) }, t);
    }
  }
}
