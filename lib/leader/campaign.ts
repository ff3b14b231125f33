import { setTimeout as pause } from 'node:timers/promises';
import { abortedOf, checkedOnRead } from '../common/checked-signal.js';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockClosedError } from '../errors/lock-closed.error.js';
import type { AcquireOptions, HoldState, LockHandle, LockInfo } from '../types/lock.types.js';
import type { CampaignOptions, LeaderFn, Leadership } from './leader.types.js';
import { errorText } from '../common/error-text.js';

/** What campaigns need of their engine (implemented by `LockEngine`). */
export interface LeaderPort {
  acquire(key: string, options: AcquireOptions): Promise<LockHandle>;
  inspect(key: string): Promise<LockInfo | null>;
  /** Where a campaign asking for alarms (`alarms: true`) has its leadership reported by the deadlock alarm. */
  activity(): { includeInAlarms(key: string): () => void };
}

/** Runs `fn` as a new lock owner of its own, whatever context the caller is in. */
export type OwnScope = <T>(fn: () => T) => T;

/** Where campaigns report (the engine's logger). */
export interface LeaderLogger {
  log?(message: string): void;
  warn(message: string): void;
  error(message: string, stack?: string): void;
}

/**
 * How long one waiting acquisition of a standby lasts before it is sent again (ms). A standby is woken by the
 * leader's release (pub/sub) or when the leader's lease can have run out, not by this.
 */
const STANDBY_WAIT_MS = 60_000;

/** Why a term ended, as its signal's reason (a lost lock aborts it with the `LockLostError` instead). */
export function termEnded(name: string, why: string): DOMException {
  return new DOMException(`leadership of "${name}" ended: ${why}`, 'AbortError');
}

/** One term this process serves: the lock held, the `Leadership` given to the function. */
class Term {
  private readonly ended = new AbortController();
  readonly leadership: Leadership;
  private settle: () => void = () => undefined;
  /** Resolves once the function returned and the lock was released. */
  readonly finished = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(
    name: string,
    readonly handle: LockHandle,
  ) {
    // Read after a pause, the signal first checks the lock's local lease deadline (timers or not): a frozen leader
    // that resumes finds it aborted before it can act on a term it may no longer hold.
    const signal = checkedOnRead(AbortSignal.any([handle.signal, this.ended.signal]), () => void handle.isHeld);
    const ended = this.ended.signal;
    this.leadership = Object.freeze({
      name,
      term: handle.fencingToken,
      signal,
      since: new Date(),
      // The lock's state; a term that ended otherwise than by a loss is 'released' (its release may be on its way).
      get state(): HoldState {
        const state = handle.state;
        return state !== 'lost' && abortedOf.call(ended) ? 'released' : state;
      },
      onStateChange: (listener: (state: HoldState) => void) => handle.onStateChange(listener),
    });
  }

  get active(): boolean {
    return this.handle.isHeld && !abortedOf.call(this.ended.signal);
  }

  end(reason: unknown): void {
    if (!abortedOf.call(this.ended.signal)) this.ended.abort(reason);
  }

  done(): void {
    this.settle();
  }
}

/**
 * One campaign: waits for the lock `leader:<name>` (a waiting acquisition, woken by pub/sub), runs the function for
 * as long as the term lasts, releases, pauses `restartDelayMs`, and campaigns again, until stopped. Each term is
 * its own lock owner, so two campaigns for one name in one process never share a term.
 */
export class Campaign {
  private readonly stopping = new AbortController();
  private term: Term | undefined;
  private warned = false;
  /** Resolves when the campaign has stopped (never rejects). */
  readonly done: Promise<void>;

  constructor(
    readonly name: string,
    private readonly key: string,
    private readonly fn: LeaderFn,
    private readonly options: Required<CampaignOptions>,
    private readonly port: LeaderPort,
    private readonly scope: OwnScope,
    private readonly logger: LeaderLogger,
  ) {
    this.done = this.loop();
  }

  /** This campaign serves a term now, and its lock is held. */
  get leads(): boolean {
    return this.term?.active ?? false;
  }

  /** Ends the current term (if any) and resolves once its lock is released; `true` if there was one. */
  async resign(): Promise<boolean> {
    const term = this.term;
    if (!term) return false;
    term.end(termEnded(this.name, 'resigned'));
    await term.finished;
    return true;
  }

  /**
   * Stops campaigning; the current term ends with `reason` (or what `termReason` makes of its term). Resolves once its
   * function returned, or `shutdownTimeoutMs` after this call (the function is then left behind), and it released.
   */
  stop(reason: unknown, termReason?: (term: number) => unknown): Promise<void> {
    if (!abortedOf.call(this.stopping.signal)) {
      this.stopping.abort(reason);
      const term = this.term;
      term?.end(termReason ? termReason(term.handle.fencingToken) : reason);
    }
    return this.done;
  }

  private get stopped(): boolean {
    return abortedOf.call(this.stopping.signal);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const next = await this.scope(() => this.serve());
      if (next === 'stop') return;
      if (next === 'pause')
        await pause(this.options.restartDelayMs, undefined, { signal: this.stopping.signal }).catch(noop);
    }
  }

  /**
   * Runs the function for `term`; once the campaign is stopping, waits for it `shutdownTimeoutMs` at most, then leaves
   * it behind (logged) so that the term's lock is released and the shutdown goes on. Rejects as the function does.
   */
  private async run(term: Term): Promise<void> {
    const running = Promise.resolve().then(() => this.fn(term.leadership));
    let timer: NodeJS.Timeout | undefined;
    let stopListening = noop;
    const leftBehind = new Promise<true>((resolve) => {
      const wait = () => (timer = setTimeout(() => resolve(true), this.options.shutdownTimeoutMs));
      if (this.stopped) return wait();
      this.stopping.signal.addEventListener('abort', wait, { once: true });
      stopListening = () => this.stopping.signal.removeEventListener('abort', wait);
    });
    try {
      if ((await Promise.race([running.then(() => false), leftBehind])) !== true) return;
    } finally {
      clearTimeout(timer);
      stopListening();
    }
    const { term: number } = term.leadership;
    this.logger.error(
      `leader "${this.name}" (term ${number}): the leader's function did not return within shutdownTimeoutMs ` +
        `(${this.options.shutdownTimeoutMs} ms) after its signal aborted; releasing the leadership and leaving the ` +
        `function behind (it still runs: make it return when lead.signal aborts)`,
    );
    running.catch(noop);
  }

  /** Campaigns once (one waiting acquisition) and, when elected, serves the term. Never rejects. */
  private async serve(): Promise<'again' | 'pause' | 'stop'> {
    let handle: LockHandle;
    try {
      handle = await this.port.acquire(this.key, {
        mode: 'write',
        leaseMs: this.options.leaseMs,
        autoExtend: true,
        waitTimeoutMs: STANDBY_WAIT_MS,
        signal: this.stopping.signal,
      });
    } catch (err) {
      if (this.stopped || err instanceof LockClosedError) return 'stop';
      if (err instanceof LockAcquireTimeoutError) return 'again';
      if (!this.warned) {
        this.logger.warn(
          `leader "${this.name}": cannot campaign (${errorText(err)}); trying again every ${this.options.restartDelayMs} ms`,
        );
      }
      this.warned = true;
      return 'pause';
    }
    this.warned = false;
    const term = new Term(this.name, handle);
    this.term = term;
    try {
      if (this.stopped) term.end(this.stopping.signal.reason);
      else {
        this.logger.log?.(`leader "${this.name}": elected, term ${handle.fencingToken}`);
        await this.run(term);
      }
    } catch (err) {
      this.logger.error(
        `leader "${this.name}" (term ${handle.fencingToken}): the leader's function threw: ${errorText(err)}; ` +
          `resigning, campaigning again in ${this.options.restartDelayMs} ms`,
        err instanceof Error ? err.stack : undefined,
      );
    } finally {
      this.term = undefined;
      term.end(termEnded(this.name, 'the leader function ended'));
      await handle.release().catch((err: unknown) => {
        this.logger.warn(
          `leader "${this.name}": releasing "${this.key}" failed (its lease will free it): ${errorText(err)}`,
        );
      });
      term.done();
    }
    return this.stopped ? 'stop' : 'pause';
  }
}

function noop(): void {}
