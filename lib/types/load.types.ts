/** What a hold or a waiter is for the gauges: a lock, a semaphore's permit, or a leadership (`leader:<name>`). */
export type LoadKind = 'lock' | 'semaphore' | 'leader';

/** Numbers of one process per kind. */
export type LoadCounts = Readonly<Record<LoadKind, number>>;

/**
 * What this process holds and waits for right now, per kind: read from the engine's own bookkeeping, never from
 * Redis (the `lock.holds` and `lock.waiters` gauges, the health details, the board's chart).
 */
export interface LockLoad {
  /**
   * Holds kept now: one per owner, key and mode (re-entered levels count once; a multi-key lock counts one per key),
   * releases in flight included until answered.
   */
  readonly holds: LoadCounts;
  /** Acquisitions waiting now (a standby leader's campaign is a waiter of kind `leader`). */
  readonly waiters: LoadCounts;
  /** Holds among `holds` that are in doubt now (the connection to Redis dropped or went silent). */
  readonly inDoubt: LoadCounts;
}
