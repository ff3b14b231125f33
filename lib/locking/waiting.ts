import type { LockRef, LockStore, WakeUp, WakeUpSubscription } from '../redis/lock-store.js';
import type { LockMode } from '../types/lock.types.js';
import { WaitSignal } from './wait-signal.js';

/** A waiting acquisition, as the deadlock alarm sees it. */
export interface WaitRecord {
  readonly key: string;
  readonly mode: LockMode;
  /** Owner id of the waiter. */
  readonly owner: string;
  /** performance.now() when the acquisition started. */
  readonly startedAt: number;
  /** Set once the alarm reported this wait. */
  alarmed: boolean;
}

/** Whether `wakeUp` lets the waiter `waiterId`, waiting in `mode`, retry. */
export function wakes(wakeUp: WakeUp, waiterId: string, mode: LockMode): boolean {
  return wakeUp === 'readers' ? mode === 'read' : wakeUp.waiterId === waiterId;
}

/**
 * Every acquisition of one engine that waits for a lock. A waiter listens for its lock's wake-ups and sleeps until
 * woken, until the blocking leases can have run out, or until its deadline, whichever is first.
 */
export class WaitingRoom {
  private readonly waits = new Set<Wait>();
  private seq = 0;

  constructor(
    private readonly store: LockStore,
    private readonly instanceId: string,
  ) {}

  /** A waiter id no other waiter of any process uses (the store registers waiters under it). */
  nextWaiterId(): string {
    return `${this.instanceId}.${++this.seq}`;
  }

  /** Whether wake-ups of `lock` already arrive: a waiter joining now can listen before its first attempt. */
  isLive(lock: LockRef): boolean {
    return this.store.isListening(lock);
  }

  /** Starts listening for `lock`'s wake-ups on behalf of waiter `waiterId`. Call `leave()` when done. */
  enter(lock: LockRef, mode: LockMode, waiterId: string, owner: string, startedAt: number): Wait {
    const wait = new Wait(this.store, lock, mode, waiterId, owner, startedAt, (w) => this.waits.delete(w));
    this.waits.add(wait);
    return wait;
  }

  /** The waits in progress, for the deadlock alarm. */
  records(): Iterable<WaitRecord> {
    return this.waits;
  }

  /** Wakes every waiter now (shutdown: each finds the engine closing and gives up). */
  wakeAll(): void {
    for (const wait of this.waits) wait.wake();
  }
}

/** One acquisition's wait: its wake-up subscription, a one-shot wake-up signal, and its alarm record. */
export class Wait implements WaitRecord {
  readonly key: string;
  alarmed = false;
  private readonly signal = new WaitSignal();
  private readonly subscription: WakeUpSubscription;

  constructor(
    store: LockStore,
    lock: LockRef,
    readonly mode: LockMode,
    waiterId: string,
    readonly owner: string,
    readonly startedAt: number,
    private readonly onLeave: (wait: Wait) => void,
  ) {
    this.key = lock.key;
    this.subscription = store.listen(lock, (wakeUp) => {
      if (wakes(wakeUp, waiterId, mode)) this.signal.fire();
    });
  }

  /** Resolves once wake-ups are received (at once when the subscription was live already). */
  async ready(): Promise<void> {
    if (!this.subscription.live) await this.subscription.ready;
  }

  /** Forgets earlier wake-ups: call before each attempt, so one arriving during it is kept. */
  rearm(): void {
    this.signal.reset();
  }

  wake(): void {
    this.signal.fire();
  }

  /** Sleeps until woken (since the last `rearm`), `ms` passed, or `abort` aborted. */
  sleep(ms: number, abort: AbortSignal | undefined): Promise<void> {
    return this.signal.wait(ms, abort);
  }

  leave(): void {
    this.subscription.stop();
    this.onLeave(this);
  }
}
