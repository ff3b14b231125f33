/** One lock implementation under test, connected to the bench's Redis. */
export interface Contender {
  /**
   * Acquires `key` (waiting the way this implementation waits), runs `fn` while holding it, then releases it.
   * Rejects only when the implementation gave up waiting; the lock is then not held.
   */
  withLock<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Closes every connection and timer the contender opened. */
  close(): Promise<void>;
}

/** How a contender is made, and how the tables name it. */
export interface ContenderSpec {
  /** Short stable id, used in JSON and charts. */
  readonly id: string;
  /** What the tables show. */
  readonly label: string;
  /** `bare` is the baseline, `library` this library, `peer` another package. */
  readonly kind: 'bare' | 'library' | 'peer';
  /** The settings used, in words. */
  readonly settings: string;
  create(redisUrl: string, keyPrefix: string): Promise<Contender>;
}
