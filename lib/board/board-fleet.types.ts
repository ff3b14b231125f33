/* The board's chart types, exported by `nest-redis-locks/board` (no code: the emitted declarations name nothing internal). */

import type { LoadCounts } from '../types/load.types.js';

/**
 * One instance's holds, waiters and holds in doubt at one moment, per kind (what the `lock.holds` and `lock.waiters`
 * gauges read), and the deadlock alarms it raised since its sample before.
 */
export interface BoardLoadSample {
  /** When, in milliseconds since the epoch (the clock of the instance that took it). */
  readonly at: number;
  readonly holds: LoadCounts;
  readonly waiters: LoadCounts;
  /** Holds among `holds` in doubt (the connection to Redis dropped or went silent). */
  readonly inDoubt: LoadCounts;
  /** Deadlock alarms since the sample before: holds kept past `holdWarningMs`. */
  readonly heldAlarms: LoadCounts;
  /** Deadlock alarms since the sample before: waits past `waitWarningMs`. */
  readonly waitAlarms: LoadCounts;
}

/** One instance of the fleet, as the board's charts and breakdown show it. */
export interface BoardFleetInstance {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly app: string;
  /** Whether it is the instance that answered. */
  readonly self: boolean;
  readonly sampleMs: number;
  /** When its last sample was taken (its clock), milliseconds since the epoch. */
  readonly lastAt: number;
  /** Its numbers at its last sample (for the one that answered: now), and its alarms over the window. */
  readonly now: BoardLoadSample;
  /** Its values at each of the fleet's `times` (alarms: those of the interval ending there). */
  readonly series: readonly BoardLoadSample[];
  /** Its holds in doubt at its last sample (key, owner). */
  readonly inDoubt: readonly { readonly key: string; readonly owner: string }[];
}

/** The fleet's load over the history there is: per instance and in total, on one time grid. */
export interface BoardFleet {
  /** The window, in milliseconds (fifteen minutes). */
  readonly windowMs: number;
  /** The grid's step, in milliseconds (the shortest `historySampleMs` of the fleet). */
  readonly stepMs: number;
  /** Where the axis starts: the oldest sample there is, at most `windowMs` ago (milliseconds since the epoch). */
  readonly from: number;
  /** Where it ends: now. */
  readonly to: number;
  /** The grid, oldest first, `to` last. */
  readonly times: readonly number[];
  readonly instances: readonly BoardFleetInstance[];
  /** The sum over the instances at each of `times`. */
  readonly total: readonly BoardLoadSample[];
  /** Why the other instances could not be read (only the answering one is shown then). */
  readonly error?: string;
}
