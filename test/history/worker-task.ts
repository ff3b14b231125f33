// What a history worker (history-worker.ts) is asked to do, passed as JSON in argv[2], and the messages between it
// and the harness (worker-pool.ts) over the IPC channel.

/** The workload mix of one worker. */
export interface WorkerTask {
  /** Worker incarnation name (`w2.1`: worker 2, second incarnation), the `by` of its events. */
  readonly name: string;
  /** Its history file (JSON lines, appended). */
  readonly historyFile: string;
  /** What its engine connects to: a redis:// URL (the TCP proxy in front of the server), or Sentinel options. */
  readonly redis: string | { readonly sentinels: readonly { host: string; port: number }[]; readonly name: string };
  /** The fenced store's Redis (the server itself, not through the proxy), or the same Sentinel options. */
  readonly store: WorkerTask['redis'];
  readonly prefix: string;
  /** Seed of this worker's choices. */
  readonly seed: number;
  /** Exclusive and read/write lock keys. */
  readonly lockKeys: readonly string[];
  /** Semaphore keys and their limit. */
  readonly permitKeys: readonly string[];
  readonly permitLimit: number;
  /** Leadership names (one campaign each). */
  readonly leaderNames: readonly string[];
  /** Leadership lease, in milliseconds. */
  readonly leaderLeaseMs: number;
  /** Leases to pick from, in milliseconds. */
  readonly leases: readonly number[];
  /** Concurrent operation loops (each its own owner context). */
  readonly loops: number;
  /**
   * How long a lock without `autoExtend` is held, as fractions of its lease: [min, max]. Past 1, its lease runs out
   * in Redis while it is held (the handle must say so before another process is granted the lock).
   */
  readonly noExtendHold: readonly [number, number];
  /** How long a `poll` operation keeps calling `tryAcquire` before it gives up, in milliseconds. */
  readonly pollMs: number;
  /** How often a held handle is sampled, in milliseconds (jittered by up to half). */
  readonly sampleMs: number;
  /**
   * Weights of the operations a loop picks: exclusive lock with/without `autoExtend`, read lock, write lock taken with
   * `tryAcquire` polling, permit.
   */
  readonly mix: Readonly<Record<OperationKind, number>>;
  /** Engine options worth varying per run. */
  readonly engine?: {
    readonly commandTimeoutMs?: number;
    readonly waitForReplicas?: { readonly replicas: number; readonly timeoutMs?: number };
  };
}

export type OperationKind = 'exclusive' | 'exclusive-no-extend' | 'read' | 'poll' | 'permit';

/** Harness → worker. */
export type ToWorker =
  /** Stop starting operations, release what is held, close the engine, exit 0. */
  | { readonly type: 'stop' }
  /**
   * Call `engine.close()` while holding (waits for a hold first, up to 3 s), keep sampling every handle it had for
   * `observeMs` after close resolved, then exit 0.
   */
  | { readonly type: 'close-engine'; readonly observeMs: number };

/** Worker → harness. */
export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'stopped' }
  | { readonly type: 'closed'; readonly holdsAtClose: number }
  | { readonly type: 'error'; readonly message: string };
