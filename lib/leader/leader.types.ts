import type { HoldState } from '../types/lock.types.js';

/** One term of leadership, handed to the function a campaign runs while this process leads. */
export interface Leadership {
  /** The name campaigned for (the lock key is `leader:<name>`). */
  readonly name: string;
  /**
   * The fencing token of this term's lock: strictly increasing across terms, whichever process leads. Pass it with
   * every write the leader makes, so that a store can refuse writes of a term that has ended.
   */
  readonly term: number;
  /**
   * Aborted when this term ends: leadership lost (a `LockLostError`: the lease ran out or Redis no longer has the
   * lock; also read after the local lease deadline passed, timers or not), `resign`, the campaign's stop function, or
   * the engine's shutdown (a `LockClosedError`). Stop acting as leader at once when it aborts.
   */
  readonly signal: AbortSignal;
  /** When this process was elected (its own clock). */
  readonly since: Date;
  /**
   * The term's lock: `'held'`; `'in-doubt'` when the connection to Redis dropped or went silent (the term may be
   * ending: pause the leader's writes until it is `'held'` again); `'lost'` (the signal aborted); `'released'` once
   * the term ended otherwise (resign, stop, shutdown, the function returned).
   */
  readonly state: HoldState;
  /**
   * Calls `listener` with the new `state` each time it changes during the term (`'in-doubt'`, back to `'held'`,
   * `'lost'`), so the leader is told before its term may have ended. Returns the function that stops listening.
   */
  onStateChange(listener: (state: HoldState) => void): () => void;
}

/** The leader of a name, as Redis has it (`leader(name)`, `watchLeader(name)`). */
export interface LeaderInfo {
  /** The leader's `appName`. */
  readonly app: string;
  readonly host: string;
  readonly pid: number;
  /** When its term began (Redis server time). */
  readonly since: Date;
  /** Its term: the fencing token of its lock. */
  readonly term: number;
}

/** Options of `campaign` and `@Leader`. */
export interface CampaignOptions {
  /**
   * Lease of the leadership lock, renewed by the watchdog while this process lives: a leader that dies or freezes
   * is replaced this long after its last renewal at most. In milliseconds; default `10_000`.
   */
  readonly leaseMs?: number;
  /**
   * Pause before campaigning again after a term ended (the function returned or threw, `resign`, leadership lost),
   * and between attempts while Redis cannot be reached. In milliseconds; default `1_000`.
   */
  readonly restartDelayMs?: number;
  /**
   * How long a shutdown (the engine's `close`, the application's, or the campaign's stop function) waits for the
   * leader's function to return after its `signal` aborted. When it runs out, the term's lock is released, the function
   * is left running behind (an error names the role) and the shutdown goes on. `0`: the lock is released at once. In
   * milliseconds; default `10_000`.
   */
  readonly shutdownTimeoutMs?: number;
  /**
   * Whether the deadlock alarm (`holdWarningMs`, `waitWarningMs`: the `held-too-long` event, its warning and metric)
   * and the board's alarm highlights report this leadership. A leadership lasts, and its standbys wait, by design, so
   * by default neither the leader's long hold nor the standbys' long wait is reported. Default `false`.
   */
  readonly alarms?: boolean;
}

/** What a campaign runs for each term it wins. */
export type LeaderFn = (lead: Leadership) => unknown;

/** Stops a campaign: ends the current term (its signal aborts, its function is awaited, the lock released). */
export type StopCampaign = () => Promise<void>;
