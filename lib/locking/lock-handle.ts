import { LockNotHeldError } from '../errors/lock-not-held.error.js';
import type { LockHandle, LockMode } from '../types/lock.types.js';
import type { Hold } from './hold.js';
import type { LockOwner } from './owner-context.js';

/** What a handle needs to end or extend its holds (implemented by `HoldKeeper`). */
export interface HoldReleaser {
  /** Releases one level of `hold`; `false` when it was no longer held. */
  releaseHold(hold: Hold): Promise<boolean>;
  /** Makes `hold`'s lease run `ms` from now; `false` when the store no longer has it. */
  extendHold(hold: Hold, ms: number): Promise<boolean>;
}

/** A handle on one acquisition: one or several holds (one per key), released together. */
export class LockHandleImpl implements LockHandle {
  readonly key: string;
  readonly keys: readonly string[];
  readonly token: string;
  readonly fencingToken: number;
  private released = false;
  private combinedSignal: AbortSignal | undefined;

  constructor(
    private readonly releaser: HoldReleaser,
    /** The owner context that acquired it (runs nested work as that owner). */
    readonly owner: LockOwner,
    private readonly holds: readonly Hold[],
    readonly mode: LockMode,
    readonly reentrant: boolean,
  ) {
    this.key = holds[0].key;
    this.keys = holds.map((h) => h.key);
    this.token = holds[0].token;
    this.fencingToken = holds[0].fencingToken;
  }

  get fencingTokens(): Readonly<Record<string, number>> {
    return Object.freeze(Object.fromEntries(this.holds.map((h) => [h.key, h.fencingToken])));
  }

  get signal(): AbortSignal {
    return (this.combinedSignal ??= this.holds.length === 1 ? this.holds[0].signal : AbortSignal.any(this.holds.map((h) => h.signal)));
  }

  get isHeld(): boolean {
    return !this.released && this.holds.every((h) => !h.lost);
  }

  async release(): Promise<boolean> {
    if (this.released) return false;
    this.released = true;
    let all = true;
    for (const hold of [...this.holds].reverse()) {
      if (!(await this.releaser.releaseHold(hold))) all = false;
    }
    return all;
  }

  async extend(ms?: number): Promise<void> {
    for (const hold of this.holds) {
      if (this.released) throw new LockNotHeldError(hold.key, 'this handle was released');
      if (hold.lost) throw new LockNotHeldError(hold.key, hold.lost.message);
      if (!(await this.releaser.extendHold(hold, ms ?? hold.leaseMs))) {
        throw new LockNotHeldError(hold.key, 'Redis no longer records this hold');
      }
    }
  }
}
