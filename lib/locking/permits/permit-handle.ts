import type { HoldState, LockHandle } from '../../types/lock.types.js';
import type { PermitHandle } from '../../types/permit.types.js';

/** A permit: the handle of its one hold, with the semaphore's limit. */
export class PermitHandleImpl implements PermitHandle {
  readonly key: string;
  readonly token: string;
  readonly fencingToken: number;
  constructor(
    private readonly hold: LockHandle,
    readonly limit: number,
  ) {
    this.key = hold.key;
    this.token = hold.token;
    this.fencingToken = hold.fencingToken;
  }

  get signal(): AbortSignal {
    return this.hold.signal;
  }

  get isHeld(): boolean {
    return this.hold.isHeld;
  }

  get state(): HoldState {
    return this.hold.state;
  }

  onStateChange(listener: (state: HoldState) => void): () => void {
    return this.hold.onStateChange(listener);
  }

  release(): Promise<boolean> {
    return this.hold.release();
  }

  extend(ms?: number): Promise<void> {
    return this.hold.extend(ms);
  }

  /** `await using`: gives the permit back; quiet for a permit released or lost. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.hold.release();
  }
}
