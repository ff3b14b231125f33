import type { LockEngine } from '../locking/engine/lock-engine.js';
import { loadKindOf } from '../locking/activity/engine-activity.js';
import type { EngineActivity } from '../locking/activity/engine-activity.js';
import type { LoadKind } from '../types/load.types.js';
import type { BoardLoadSample } from './board-fleet.types.js';

/** How far back the board's chart looks: fifteen minutes. */
export const LOAD_HISTORY_WINDOW_MS = 15 * 60_000;
/** The most samples kept (a faster `historySampleMs` covers less than the window). */
export const MAX_LOAD_SAMPLES = 900;

/** What the history reads of the engine (`activity` is internal: spelled out, so the emitted types do not name it). */
export type HistoryEngine = Pick<LockEngine, 'on'> & { activity(): EngineActivity };

const zero = (): Record<LoadKind, number> => ({ lock: 0, semaphore: 0, leader: 0 });

/**
 * The board's memory of this process's load: a ring of samples of the holds, waiters and holds in doubt per kind, one
 * every `sampleMs` (each a count over the engine's own bookkeeping, no Redis call), with the deadlock alarms counted
 * per interval, for the last fifteen minutes. A board opened fresh shows them at once. Nothing is sampled when
 * `sampleMs` is `0`. Each sample is also handed to `onSample` (the fleet publisher).
 */
export class LoadHistory {
  private readonly ring: BoardLoadSample[] = [];
  readonly capacity: number;
  private timer: NodeJS.Timeout | undefined;
  private engine: HistoryEngine | undefined;
  private off: (() => void) | undefined;
  private heldAlarms = zero();
  private waitAlarms = zero();

  constructor(
    readonly sampleMs: number,
    private readonly onSample: (sample: BoardLoadSample) => void = () => undefined,
  ) {
    this.capacity = sampleMs > 0 ? Math.min(MAX_LOAD_SAMPLES, Math.ceil(LOAD_HISTORY_WINDOW_MS / sampleMs)) : 0;
  }

  /** Starts sampling `engine` and counting its alarms. */
  attach(engine: HistoryEngine): void {
    this.engine = engine;
    this.off = engine.on('held-too-long', (e) => {
      const counts = e.detectedBy === 'holder' ? this.heldAlarms : this.waitAlarms;
      counts[loadKindOf(e.kind, e.key)]++;
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

  /** The samples of the window, oldest first. */
  samples(now = Date.now()): BoardLoadSample[] {
    return this.ring.filter((s) => s.at >= now - LOAD_HISTORY_WINDOW_MS);
  }

  /** The numbers now, with the alarms since the last sample (not taken from the next one: a look, not a sample). */
  now(): BoardLoadSample {
    return this.read(false);
  }

  private sample(): void {
    const sample = this.read(true);
    this.ring.push(sample);
    if (this.ring.length > this.capacity) this.ring.shift();
    this.onSample(sample);
  }

  private read(take: boolean): BoardLoadSample {
    const load = this.engine?.activity().load();
    const sample = {
      at: Date.now(),
      holds: load?.holds ?? zero(),
      waiters: load?.waiters ?? zero(),
      inDoubt: load?.inDoubt ?? zero(),
      heldAlarms: { ...this.heldAlarms },
      waitAlarms: { ...this.waitAlarms },
    };
    if (take) [this.heldAlarms, this.waitAlarms] = [zero(), zero()];
    return sample;
  }
}
