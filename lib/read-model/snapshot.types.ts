// The JSON of the lock board and of `nest-redis-locks list --json`: what a snapshot of the locks under a prefix
// holds. Plain data (numbers, strings, ISO dates), so it can be served, stored and compared as it is.

/** One holder of a held key, as the board shows it. */
export interface BoardHolder {
  /** `'write'` or `'read'` for a lock. */
  readonly mode: string;
  /** Owner context id (`<instance id>:<n>`), never the secret token. */
  readonly owner: string;
  readonly host: string;
  readonly pid: number;
  readonly app: string;
  /** Reentrant hold count (`0`: finished, kept until `holdAtLeastMs`). */
  readonly holdCount: number;
  /** The holder's work is done; the hold lasts until `holdAtLeastMs` after it was granted. */
  readonly finished: boolean;
  /** When the hold was first granted (Redis server time), ISO 8601. */
  readonly since: string;
  /** How long it has been held, in milliseconds, by Redis's clock. */
  readonly heldMs: number;
  /** Lease left, in milliseconds, by Redis's clock. */
  readonly remainingLeaseMs: number;
  readonly fencingToken: number;
}

/** Where the age of the oldest waiter comes from (see docs/board.md). */
export type WaitAgeSource =
  /** Arrival times of the fair queue, in Redis. */
  | 'fair-queue'
  /** The waits of the process that took the snapshot (non-fair waiters of other processes have no recorded age). */
  | 'this-process';

/** One held key. */
export interface BoardEntry {
  /**
   * What it is: `'lock'`, `'semaphore'`, or `'leader'` (a lock on `leader:<name>`: leadership, see `leaders`).
   */
  readonly kind: string;
  readonly key: string;
  /** `'write'` while a writer holds it, otherwise `'read'` (for a lock). */
  readonly mode: string;
  readonly holders: readonly BoardHolder[];
  /** Waiters registered in Redis, of every process. */
  readonly waiting: number;
  readonly waitingWriters: number;
  readonly waitingReaders: number;
  /** The last fencing token handed out for this key. */
  readonly fencingToken: number;
  /** Age of the oldest waiter whose arrival is known, in milliseconds (`null`: none known). */
  readonly oldestWaitMs: number | null;
  readonly oldestWaitSource: WaitAgeSource | null;
  /** What the deadlock alarm would flag. */
  readonly alarms: {
    /** A holder has held it longer than `holdWarningMs`. */
    readonly heldTooLong: boolean;
    /** A known waiter has waited longer than `waitWarningMs`. */
    readonly waitedTooLong: boolean;
  };
}

/**
 * The leader of one name (`@Leader`, `campaign`): the holder of the write lock `leader:<name>`, whose fencing token
 * is the term.
 */
export interface BoardLeader {
  /** The name campaigned for. */
  readonly name: string;
  /** Its lock key, `leader:<name>`. */
  readonly key: string;
  /** Owner context id of the term (`<instance id>:<n>`). */
  readonly owner: string;
  readonly app: string;
  readonly host: string;
  readonly pid: number;
  /** The term: the fencing token of the leadership lock, strictly increasing across terms. */
  readonly term: number;
  /** When the term began (Redis server time), ISO 8601. */
  readonly since: string;
  /** How long it has led, in milliseconds, by Redis's clock. */
  readonly heldMs: number;
  /** Lease left, in milliseconds: a leader that died is replaced when it runs out. */
  readonly remainingLeaseMs: number;
  /** Campaigns waiting to take over (standbys registered in Redis, of every process). */
  readonly standbys: number;
}

/** One master's part of a scan that failed. */
export interface BoardScanFailure {
  /** `host:port` of the master. */
  readonly master: string;
  readonly error: string;
}

/** The held keys under a prefix, from one bounded scan. */
export interface BoardSnapshot {
  /** When the snapshot was taken (this process's clock), ISO 8601. */
  readonly takenAt: string;
  /** How long taking it took, in milliseconds. */
  readonly durationMs: number;
  /** The module's `keyPrefix`. */
  readonly keyPrefix: string;
  /** The key filter (a prefix of lock keys) the scan used; `''` for all. */
  readonly filter: string;
  /** The held keys read, sorted by key. */
  readonly entries: readonly BoardEntry[];
  /** The leaders among them (entries of kind `'leader'`), sorted by name. */
  readonly leaders: readonly BoardLeader[];
  /** Held keys the scan found (read or not). */
  readonly found: number;
  /**
   * Held keys found but not read (over `maxKeys`): narrow the filter to see them. When the scan stopped early
   * (`cut`), there are at least this many.
   */
  readonly more: number;
  /** Whether the scan went over the whole keyspace of every master. */
  readonly complete: boolean;
  /**
   * Why the scan stopped before the end: `'max-keys'`, it found more than `maxKeys` (the ones read are the first it
   * met, not the first in key order), or `'time-budget'`, it ran out of `scanBudgetMs` (some keys may be missing).
   */
  readonly cut: 'max-keys' | 'time-budget' | null;
  /** Masters of a Cluster (or of a quorum) that could not be scanned; the rest of the snapshot stands. */
  readonly failures: readonly BoardScanFailure[];
  /** Set when nothing could be read (Redis unreachable): `entries` is empty then and says nothing. */
  readonly error?: string;
  /** The thresholds the alarms were computed with, in milliseconds (`0`: off). */
  readonly holdWarningMs: number;
  readonly waitWarningMs: number;
}

/** One event of the process serving the board. */
export interface BoardEvent {
  /** Increasing per process, for de-duplication by pollers. */
  readonly id: number;
  /** `acquired`, `released`, `lost`, `timeout`, `held-too-long` (a hold past `holdWarningMs`), `waited-too-long` (a wait past
   * `waitWarningMs`), `force-released` (from the board). */
  readonly type: string;
  readonly key: string;
  readonly mode: string;
  /** Owner context id, or for `force-released` what the request said of itself (see docs/board.md). */
  readonly owner: string;
  /** When it happened, ISO 8601. */
  readonly at: string;
  /** A short detail: wait or hold time, loss reason. */
  readonly detail: string;
  /** The instance that saw it. */
  readonly host: string;
  readonly pid: number;
}
