import { performance } from 'node:perf_hooks';
import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import type { LockRef, LockStore, WaitingCall, WakeUp, WakeUpSubscription } from '../../store/lock-store.js';
import { WAITER_HEARTBEAT_MS } from '../../store/waiter-timing.js';
import type { LockMode } from '../../types/lock.types.js';
import { kindOf } from '../events/lock-events.js';
import type { LockKind } from '../events/lock-events.js';
import { settlesBy } from '../holds/deadlines.js';
import { WaitSignal, onAbort } from './wait-signal.js';

/** A waiting acquisition, as the deadlock alarm sees it. */
export interface WaitRecord {
  readonly key: string;
  readonly kind: LockKind;
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
 *
 * While any of its waiters is registered in the store, the room sends the waiters' heartbeat every
 * `WAITER_HEARTBEAT_MS`: one `keepWaiting` call for all of them, which renews their registrations (a waiter whose
 * process died or froze stops renewing, and is passed over once its registration or claim window ran out) and wakes
 * the waiters that may get in now, or whose registration is gone (after a stall: they register afresh).
 */
export class WaitingRoom {
  private readonly waits = new Set<Wait>();
  private seq = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private beating = false;

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
  enter(lock: LockRef, mode: LockMode, fair: boolean, waiterId: string, owner: string, startedAt: number): Wait {
    const wait = new Wait(
      this.store,
      { lock, mode, fair, waiterId },
      owner,
      startedAt,
      (w) => this.waits.delete(w),
      () => this.beat(),
    );
    this.waits.add(wait);
    return wait;
  }

  /** Keeps the heartbeat going while a waiter is registered. */
  private beat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setTimeout(() => {
      this.heartbeat = undefined;
      void this.keepWaiting();
    }, WAITER_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private async keepWaiting(): Promise<void> {
    const registered = [...this.waits].filter((w) => w.registered);
    if (registered.length === 0) return;
    // One round at a time: a slow round is not piled on (the registrations outlive several periods).
    if (!this.beating) {
      this.beating = true;
      try {
        const replies = await this.store.keepWaiting(registered.map((w) => w.call));
        replies.forEach((reply, i) => {
          if (reply === 'attempt') registered[i].wake();
        });
      } catch {
        // Redis did not answer: the waiters keep their own retry timers; the next round tries again.
      } finally {
        this.beating = false;
      }
    }
    if ([...this.waits].some((w) => w.registered)) this.beat();
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
  readonly kind: LockKind;
  readonly mode: LockMode;
  alarmed = false;
  /** Whether the store has the waiter registered (an attempt was refused): the heartbeat renews it then. */
  registered = false;
  private readonly signal = new WaitSignal();
  private readonly subscription: WakeUpSubscription;

  constructor(
    store: LockStore,
    /** The waiter, as the heartbeat names it. */
    readonly call: WaitingCall,
    readonly owner: string,
    readonly startedAt: number,
    private readonly onLeave: (wait: Wait) => void,
    private readonly onRegistered: () => void,
  ) {
    this.key = call.lock.key;
    this.kind = kindOf(call.lock);
    this.mode = call.mode;
    const { waiterId, mode } = call;
    this.subscription = store.listen(call.lock, (wakeUp) => {
      if (wakes(wakeUp, waiterId, mode)) this.signal.fire();
    });
  }

  /** The store registered the waiter (an attempt was refused): from now on the heartbeat renews it. */
  markRegistered(): void {
    if (this.registered) return;
    this.registered = true;
    this.onRegistered();
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
    this.registered = false;
    this.subscription.stop();
    this.onLeave(this);
  }
}

/**
 * Waits up to `ms` for the wait's subscription, or until `signal` aborts. Bounded: without a confirmed subscription
 * (Redis slow, reconnecting) the waiter still retries when the blocking leases can have run out. A subscription
 * Redis refuses (no channel rights) fails the acquisition: without wake-ups every wait would last until a lease ran
 * out.
 */
export async function untilSubscribed(wait: Wait, ms: number, signal: AbortSignal | undefined): Promise<void> {
  // Aborted during the attempt before: no wait (an 'abort' event that already fired does not fire again).
  if (signal?.aborted) return;
  let refused: unknown;
  let stopListening: (() => void) | undefined;
  const ready = wait.ready().catch((err: unknown) => {
    refused = err;
  });
  const aborted = signal && new Promise<void>((resolve) => (stopListening = onAbort(signal, resolve)));
  try {
    await settlesBy(aborted ? Promise.race([ready, aborted]) : ready, performance.now() + ms);
  } finally {
    stopListening?.();
  }
  if (refused instanceof LockUnavailableError && refused.reason === 'permission-denied') throw refused;
}
