import { performance } from 'node:perf_hooks';
import { LockClosedError } from '../../errors/lock-closed.error.js';
import { LockKeyError } from '../../errors/lock-key.error.js';
import { validateLockKey } from '../../store/lock-key.js';
import type { LockInfo } from '../../types/lock.types.js';
import type { EngineParts } from './engine-parts.js';

/** The engine's calls on a lock by key, not by handle: release by token, force release, inspect. */
export class EngineAdmin {
  constructor(
    private readonly parts: Pick<EngineParts, 'store' | 'keeper'>,
    private readonly closed: () => boolean,
  ) {}

  async release(key: string, token: string): Promise<boolean> {
    const lock = this.parts.store.lock(validateLockKey(key));
    if (typeof token !== 'string' || token.length === 0)
      throw new LockKeyError(`invalid token for "${key}": expected the non-empty token of a LockHandle`, token, key);
    this.throwIfClosed(key);
    this.parts.keeper.endByToken(key, token);
    return (await this.parts.store.release(lock, token, undefined)) === 'ended';
  }

  async forceRelease(key: string): Promise<boolean> {
    const lock = this.parts.store.lock(validateLockKey(key));
    this.throwIfClosed(key);
    const sentAt = performance.now();
    const held = await this.parts.store.forceRelease(lock);
    this.parts.keeper.loseAll(key, sentAt);
    return held;
  }

  async inspect(key: string): Promise<LockInfo | null> {
    const lock = this.parts.store.lock(validateLockKey(key));
    this.throwIfClosed(key);
    return this.parts.store.inspect(lock);
  }

  private throwIfClosed(key: string): void {
    if (this.closed()) throw new LockClosedError(key);
  }
}
