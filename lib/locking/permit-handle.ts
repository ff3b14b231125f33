import type { LockHandle } from '../types/lock.types.js';
import type { PermitHandle } from '../types/permit.types.js';

/** A permit: the handle of its one hold, with the semaphore's limit; `onEnd` runs once when it is released. */
export class PermitHandleImpl implements PermitHandle {
  readonly key: string;
  readonly token: string;
  readonly fencingToken: number;
  private ended = false;

  constructor(
    private readonly hold: LockHandle,
    readonly limit: number,
    private readonly onEnd: () => void,
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

  release(): Promise<boolean> {
    if (!this.ended) {
      this.ended = true;
      this.onEnd();
    }
    return this.hold.release();
  }

  extend(ms?: number): Promise<void> {
    return this.hold.extend(ms);
  }
}
