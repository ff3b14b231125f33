import type { LockEngine } from '../locking/lock-engine.js';
import { loadKindOf } from '../locking/engine-activity.js';
import type { EngineActivity, LoadCounts, LoadKind } from '../locking/engine-activity.js';

/** How far back the board's chart looks: fifteen minutes. */
export const LOAD_HISTORY_WINDOW_MS = 15 * 60_000;
/** The most samples kept (a faster `historySampleMs` covers less than the window). */
export const MAX_LOAD_SAMPLES = 900;
/** The most alarm marks kept. */
const MAX_ALARM_MARKS = 200;

/** This process's holds and waiters at one moment, per kind (what the `lock.holds` and `lock.waiters` gauges read). */
export interface BoardLoadSample {
  /** When, in milliseconds since the epoch (the clock of the instance that took it). */
  readonly at: number;
  readonly holds: LoadCounts;
  readonly waiters: LoadCounts;
}

/** A moment the deadlock alarm fired in this process (a `held-too-long` event). */
export interface BoardAlarmMark {
  /** When, in milliseconds since the epoch. */
  readonly at: number;
  readonly kind: LoadKind;
  readonly key: string;
  /** `'holder'`: a hold past `holdWarningMs`; `'waiter'`: a wait past `waitWarningMs`. */
  readonly detectedBy: 'holder' | 'waiter';
}

/** The chart's data: the samples of the last fifteen minutes, the alarms among them, and the numbers now. */
export interface BoardLoadHistory {
  /** How often the instance samples (`historySampleMs`; `0`: it keeps no samples, the page keeps its own). */
  readonly sampleMs: number;
  /** The window, in milliseconds (fifteen minutes). */
  readonly windowMs: number;
  /** Oldest first. */
  readonly samples: readonly BoardLoadSample[];
  readonly alarms: readonly BoardAlarmMark[];
  /** The numbers at the moment of this answer. */
  readonly now: BoardLoadSample;
}

/** What the history reads of the engine (`activity` is internal: spelled out, so the emitted types do not name it). */
type HistoryEngine = Pick<LockEngine, 'on'> & { activity(): EngineActivity };

/**
 * The board's memory of this process's load: a ring of samples of the holds and waiters per kind, one every
 * `sampleMs` (each a count over the engine's own bookkeeping, no Redis call), and the deadlock alarm's moments, for
 * the last fifteen minutes. A board opened fresh shows them at once. Nothing is sampled when `sampleMs` is `0`.
 */
export class LoadHistory {
  private readonly samples: BoardLoadSample[] = [];
  private readonly alarms: BoardAlarmMark[] = [];
  private readonly capacity: number;
  private timer: NodeJS.Timeout | undefined;
  private engine: HistoryEngine | undefined;
  private off: (() => void) | undefined;

  constructor(private readonly sampleMs: number) {
    this.capacity = sampleMs > 0 ? Math.min(MAX_LOAD_SAMPLES, Math.ceil(LOAD_HISTORY_WINDOW_MS / sampleMs)) : 0;
  }

  /** Starts sampling `engine` and recording its alarms. */
  attach(engine: HistoryEngine): void {
    this.engine = engine;
    this.off = engine.on('held-too-long', (e) => {
      this.alarms.push({ at: Date.now(), kind: loadKindOf(e.kind, e.key), key: e.key, detectedBy: e.detectedBy });
      if (this.alarms.length > MAX_ALARM_MARKS) this.alarms.shift();
    });
    if (this.capacity === 0) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.sampleMs);
    this.timer.unref();
  }

  /** Stops sampling. */
  detach(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.off?.();
    this.off = undefined;
  }

  /** The samples and alarms of the window, and the numbers now. */
  view(): BoardLoadHistory {
    const now = this.read();
    const since = now.at - LOAD_HISTORY_WINDOW_MS;
    return {
      sampleMs: this.sampleMs,
      windowMs: LOAD_HISTORY_WINDOW_MS,
      samples: this.samples.filter((s) => s.at >= since),
      alarms: this.alarms.filter((a) => a.at >= since),
      now,
    };
  }

  private sample(): void {
    this.samples.push(this.read());
    if (this.samples.length > this.capacity) this.samples.shift();
  }

  private read(): BoardLoadSample {
    const load = this.engine?.activity().load();
    const zero = { lock: 0, semaphore: 0, leader: 0 };
    return { at: Date.now(), holds: load?.holds ?? zero, waiters: load?.waiters ?? zero };
  }
}
