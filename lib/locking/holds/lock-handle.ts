import { LockNotHeldError } from '../../errors/lock-not-held.error.js';
import type { HoldState, LockHandle, LockMode } from '../../types/lock.types.js';
import { checkedOnRead } from '../../common/checked-signal.js';
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
  /** The state when it was released: `'lost'` stays lost, anything else is `'released'`. */
  private final: HoldState | undefined;
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
    if (this.holds.length === 1) return this.holds[0].signal;
    return (this.combinedSignal ??= checkedOnRead(AbortSignal.any(this.holds.map((h) => h.signal)), () =>
      this.holds.forEach((h) => h.checkDeadline()),
    ));
  }

  /**
   * Not released, and no hold lost, past its local lease deadline (checked now, timers or not), or ended by the engine
   * (shutdown, a release by token).
   */
  get isHeld(): boolean {
    return (
      !this.released &&
      this.holds.every((h) => {
        h.checkDeadline();
        return !h.lost && !h.ended;
      })
    );
  }

  /**
   * `'released'` (`'lost'` if it was lost before), `'lost'` (any hold lost or past its local deadline), `'released'`
   * (any hold ended by the engine: shutdown, a release by token), `'in-doubt'` (any hold in doubt), else `'held'`.
   */
  get state(): HoldState {
    if (this.final) return this.final;
    let doubt = false;
    let ended = false;
    for (const h of this.holds) {
      h.checkDeadline();
      if (h.lost) return 'lost';
      if (h.ended) ended = true;
      if (h.doubtSince !== undefined) doubt = true;
    }
    return ended ? 'released' : doubt ? 'in-doubt' : 'held';
  }

  /** Calls `listener` with the new state each time it changes (in doubt, held again, lost) until released. */
  onStateChange(listener: (state: HoldState) => void): () => void {
    let last = this.state;
    const changed = (): void => {
      const now = this.state;
      if (now === last) return;
      last = now;
      if (now !== 'released') listener(now);
    };
    const stops = this.holds.map((h) => h.watch(changed));
    return () => stops.forEach((stop) => stop());
  }

  /** Releases every hold at once (one round trip each, in parallel): settles within one command timeout. */
  async release(): Promise<boolean> {
    if (this.released) return false;
    this.final = this.state === 'lost' ? 'lost' : 'released';
    this.released = true;
    const results = await Promise.allSettled([...this.holds].reverse().map((hold) => this.releaser.releaseHold(hold)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return results.every((r) => r.status === 'fulfilled' && r.value);
  }

  /** `await using`: releases; a handle released already or lost resolves quietly (`release()` resolves `false`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  async extend(ms?: number): Promise<void> {
    for (const hold of this.holds) {
      if (this.released) throw new LockNotHeldError(hold.key, 'this handle was released');
      hold.checkDeadline();
      if (hold.lost) throw new LockNotHeldError(hold.key, hold.lost.message);
    }
    const results = await Promise.allSettled(
      this.holds.map((hold) => this.releaser.extendHold(hold, ms ?? hold.leaseMs)),
    );
    results.forEach((r, i) => {
      if (r.status === 'rejected') throw r.reason;
      if (!r.value) throw new LockNotHeldError(this.holds[i].key, 'Redis no longer records this hold');
    });
  }
}
