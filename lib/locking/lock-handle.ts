import { LockNotHeldError } from '../errors/lock-not-held.error.js';
import type { Hold } from './hold.js';
import type { LockEngine } from './lock-engine.js';
import type { LockHandle, LockMode } from './lock.types.js';
import type { LockOwner } from './owner-context.js';

/** A handle on one acquisition: one or several holds (one per key), released together. */
export class LockHandleImpl implements LockHandle {
  readonly key: string;
  readonly keys: readonly string[];
  readonly token: string;
  readonly fencingToken: number;
  readonly fencingTokens: Readonly<Record<string, number>>;
  readonly signal: AbortSignal;
  private released = false;

  constructor(
    private readonly engine: LockEngine,
    readonly owner: LockOwner,
    private readonly holds: readonly Hold[],
    readonly mode: LockMode,
    readonly reentrant: boolean,
  ) {
    this.key = holds[0].key;
    this.keys = holds.map((h) => h.key);
    this.token = holds[0].token;
    this.fencingToken = holds[0].fencingToken;
    this.fencingTokens = Object.freeze(Object.fromEntries(holds.map((h) => [h.key, h.fencingToken])));
    this.signal = holds.length === 1 ? holds[0].controller.signal : AbortSignal.any(holds.map((h) => h.controller.signal));
  }

  get isHeld(): boolean {
    return !this.released && this.holds.every((h) => !h.lost);
  }

  async release(): Promise<boolean> {
    if (this.released) return false;
    this.released = true;
    let all = true;
    for (const hold of [...this.holds].reverse()) {
      if (!(await this.engine.releaseHold(hold))) all = false;
    }
    return all;
  }

  async extend(ms?: number): Promise<void> {
    for (const hold of this.holds) {
      if (this.released) throw new LockNotHeldError(hold.key, 'this handle was released');
      if (hold.lost) throw new LockNotHeldError(hold.key, hold.lost.message);
      if (!(await this.engine.extendHold(hold, ms ?? hold.leaseMs))) {
        throw new LockNotHeldError(hold.key, 'Redis no longer records this hold');
      }
    }
  }
}
