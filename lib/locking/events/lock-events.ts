import { EventEmitter } from 'node:events';
import type { LockLostError } from '../../errors/lock-lost.error.js';
import type { LockRef } from '../../store/lock-store.js';
import { isPermitRef } from '../../store/permit-store.js';
import type { LockMode } from '../../types/lock.types.js';
import { errorText } from '../../common/error-text.js';

/**
 * What an event is about: a lock, or a permit of a semaphore (`acquirePermit`, `@Semaphore`; its `mode` is `'write'`).
 */
export type LockKind = 'lock' | 'semaphore';

/** @internal The kind of the lock or semaphore `ref` names. */
export function kindOf(ref: LockRef): LockKind {
  return isPermitRef(ref) ? 'semaphore' : 'lock';
}

interface LockEventBase {
  readonly key: string;
  readonly kind: LockKind;
  readonly mode: LockMode;
  /** Owner context id (`<instance id>:<n>`), not the secret token. */
  readonly owner: string;
}

/** Who holds a lock, as reported by the held-too-long alarm. */
export interface LockHolderIdentity {
  readonly owner: string;
  readonly host: string;
  readonly pid: number;
  readonly app: string;
  readonly mode: LockMode;
  readonly since: Date;
}

/**
 * The deadlock alarm: a hold kept past `holdWarningMs` (`detectedBy: 'holder'`, reported by the holding process)
 * or a waiter stuck past `waitWarningMs` (`detectedBy: 'waiter'`, with the holders read from Redis). Once each.
 */
export type HeldTooLongEvent = LockEventBase & {
  readonly detectedBy: 'holder' | 'waiter';
  /** How long the (oldest) holder has held it, in milliseconds. */
  readonly heldMs: number;
  /** For `'waiter'`: how long the waiter has waited, in milliseconds; `0` for `'holder'`. */
  readonly waitedMs: number;
  readonly holders: readonly LockHolderIdentity[];
};

/** Why holds went in doubt: the command connection dropped, or Redis did not answer the liveness check in time. */
export type DoubtReason = 'connection-lost' | 'no-answer';

/** Payload of every event, by event name. */
export interface LockEvents {
  /** A hold began or was re-entered. `waitedMs`: time spent waiting, in milliseconds. */
  acquired: LockEventBase & { readonly waitedMs: number; readonly fencingToken: number; readonly reentrant: boolean };
  /** A hold ended (its last reentrant level was released). `heldMs`: hold duration, in milliseconds. */
  released: LockEventBase & { readonly heldMs: number };
  /** An acquisition found the lock taken and starts waiting (once per acquisition). */
  contended: LockEventBase;
  /** An acquisition gave up after `waitedMs` milliseconds. */
  timeout: LockEventBase & { readonly waitedMs: number };
  /** A held lock was lost; `heldMs` since it was acquired. */
  lost: LockEventBase & { readonly heldMs: number; readonly error: LockLostError };
  /**
   * A hold went in doubt: the command connection to Redis dropped (`reason: 'connection-lost'`) or Redis did not answer
   * the liveness check (`'no-answer'`: paused, a network black hole). It may still be valid, for `leftMs` more at most
   * (its conservative local lease deadline); pause writes. Followed by `reconnected` or `lost`. Once per doubt.
   */
  'in-doubt': LockEventBase & { readonly reason: DoubtReason; readonly leftMs: number };
  /** A hold in doubt was confirmed (a renewal succeeded before its local deadline) after `doubtMs` milliseconds. */
  reconnected: LockEventBase & { readonly doubtMs: number };
  /** The deadlock alarm (see `HeldTooLongEvent`). */
  'held-too-long': HeldTooLongEvent;
  /**
   * `ifLocked: 'skip'`: the function was not run. `reason`: `'busy'` (the lock is held elsewhere) or `'unavailable'`
   * (Redis could not be reached or did not answer in time: fail closed; `error` says why).
   */
  skipped: LockEventBase & { readonly reason: 'busy' | 'unavailable'; readonly error?: Error };
}

/** Event names, for typed subscription. */
export type LockEventName = keyof LockEvents;
/** A listener of event `E`. */
export type LockEventListener<E extends LockEventName> = (event: LockEvents[E]) => void;

/** Minimal logger the engine writes to; the Nest layer passes a Nest `Logger`. */
export interface LockLogger {
  debug?(message: string): void;
  log?(message: string): void;
  warn(message: string): void;
  error(message: string, stack?: string): void;
}

/** The engine's typed events. A listener that throws is logged, never breaks the lock operation that emitted. */
export class LockEventBus {
  private readonly emitter = new EventEmitter();

  constructor(private readonly logger: LockLogger) {
    this.emitter.setMaxListeners(0);
  }

  on<E extends LockEventName>(event: E, listener: LockEventListener<E>): () => void {
    this.emitter.on(event, listener);
    return () => this.emitter.off(event, listener);
  }

  off<E extends LockEventName>(event: E, listener: LockEventListener<E>): void {
    this.emitter.off(event, listener);
  }

  emit<E extends LockEventName>(event: E, payload: LockEvents[E]): void {
    if (this.emitter.listenerCount(event) === 0) return;
    try {
      this.emitter.emit(event, payload);
    } catch (err) {
      this.logger.error(`a "${event}" listener threw: ${errorText(err)}`);
    }
  }
}
