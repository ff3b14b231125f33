import { performance } from 'node:perf_hooks';
import type { ConnectionStateChange, StorePing } from '../../store/lock-store.js';
import type { Hold } from './hold.js';
import { kindOf } from '../events/lock-events.js';
import type { DoubtReason, LockEventBus } from '../events/lock-events.js';

/** A check whose result comes this much later than its bound means the event loop was stalled, in milliseconds. */
const STALL_MS = 50;

/** What `HoldDoubt` needs of the holds' keeper. */
export interface DoubtKeeper {
  /** Every hold kept (a copy). */
  list(): Hold[];
  /** Number of holds kept. */
  readonly size: number;
  /** Has the watchdog renew these holds now (those with `autoExtend` and no renewal in flight). */
  renewSoon(holds: readonly Hold[]): void;
  /** Whether the store still records these holds, without touching their leases (bounded by the command timeout). */
  stillRecorded(holds: readonly Hold[]): Promise<boolean[]>;
  /** Declares `hold` lost (see `HoldKeeper.markLost`). */
  markLost(hold: Hold, reason: 'not-in-redis'): void;
}

/** How an engine's `HoldDoubt` is made. */
export interface HoldDoubtOptions {
  /** The store's round trip on its connections (`LockStore.ping`), bounded by `timeoutMs`. */
  readonly ping: (timeoutMs: number) => Promise<StorePing>;
  /** When the store last answered any call (performance.now()): Redis answering others is not silent. */
  readonly lastAnswerAt: () => number;
  readonly events: LockEventBus;
  /** `livenessCheckMs`: the check's interval and bound; `0`: no check (connection reports only). */
  readonly intervalMs: number;
  /** Independent masters (quorum mode), else 1: holds are in doubt when a majority's connections are down. */
  readonly masters: number;
  /** The keeper (read lazily: it is made after this). */
  readonly keeper: () => DoubtKeeper;
}

/**
 * When holds are in doubt (Curator's SUSPENDED, Chubby's jeopardy): the hold may still be valid in Redis but this
 * process cannot confirm it now. Two things put every hold in doubt at once: the store reporting that the command
 * connection dropped (in quorum mode: that a majority of the masters' command connections is down), and the liveness
 * check, a `PING` sent every `intervalMs` while anything is held, not answered within `intervalMs` (a paused Redis,
 * a network black hole: nothing closes the connection). A renewal confirmed before the hold's local deadline brings
 * it back (`confirmed`; holds without `autoExtend` are never renewed: an answered check brings them back); the
 * deadline passing makes it lost, as ever (the keeper). A hold without `autoExtend` is held again only once the store
 * confirms that it still records its token (`verify`): an answered check proves Redis is back, not that it kept the
 * hold (a restart without persistence, a failover, a flush). Connections the application passed in report closes only;
 * the check covers the rest. In doubt, the watchdog renews at once and every 250 ms after a failure, so the hold is
 * confirmed as soon as Redis answers again.
 */
export class HoldDoubt {
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private stopped = false;
  /** Command connections reported down and not back yet (one per master in quorum mode). */
  private commandsDown = 0;

  constructor(private readonly options: HoldDoubtOptions) {}

  /** A hold was granted: starts the liveness check unless it runs. */
  holding(): void {
    if (this.timer || this.checking || this.stopped || this.options.intervalMs === 0) return;
    this.schedule(this.options.intervalMs);
  }

  /** A connection of the store went down or came back. */
  changed(change: ConnectionStateChange): void {
    if (this.stopped || change.connection !== 'command') return;
    this.commandsDown = Math.max(0, this.commandsDown + (change.state === 'lost' ? 1 : -1));
    if (!this.majorityUp()) this.suspect('connection-lost');
    else if (change.state === 'restored') this.recheck();
  }

  /** A renewal (or `extend`) of `hold` was confirmed by the store: a hold in doubt is held again. */
  confirmed(hold: Hold): void {
    const since = hold.doubtSince;
    if (since === undefined || hold.lost || hold.ended) return;
    hold.doubtSince = undefined;
    hold.changed();
    this.options.events.emit('reconnected', { ...about(hold), doubtMs: performance.now() - since });
  }

  /** Shutdown: no more checks. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private majorityUp(): boolean {
    const { masters } = this.options;
    return masters - this.commandsDown >= Math.floor(masters / 2) + 1;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => void this.check(), Math.max(0, ms));
    this.timer.unref();
  }

  /** One liveness check; the next one `intervalMs` after this one was sent, while anything is held. */
  private async check(): Promise<void> {
    this.timer = undefined;
    const { intervalMs } = this.options;
    if (this.stopped || this.options.keeper().size === 0) return;
    this.checking = true;
    const sentAt = performance.now();
    let ping: StorePing;
    try {
      ping = await this.options.ping(intervalMs);
    } finally {
      this.checking = false;
    }
    if (this.stopped) return;
    const now = performance.now();
    if (ping.command) this.answered();
    // Not in doubt when this process was stalled (the answer may be unread), or Redis answered other calls meanwhile
    // (the PING waits behind this process's own commands): only silence counts, as for every call.
    else if (now - sentAt <= intervalMs + STALL_MS && this.options.lastAnswerAt() <= sentAt) this.suspect('no-answer');
    if (this.options.keeper().size > 0) this.schedule(sentAt + intervalMs - now);
  }

  /** The check was answered: the holds in doubt are renewed (or, without `autoExtend`, verified) now. */
  private answered(): void {
    if (!this.majorityUp()) return;
    this.recheck();
  }

  /** Renews the holds in doubt now; those without `autoExtend` are verified instead (their leases left alone). */
  private recheck(): void {
    const keeper = this.options.keeper();
    const doubtful = keeper.list().filter((hold) => hold.doubtSince !== undefined);
    if (doubtful.length === 0) return;
    keeper.renewSoon(doubtful);
    this.verify(doubtful.filter((hold) => !hold.autoExtend));
  }

  /**
   * Asks the store whether it still records `holds` (without `autoExtend`: nothing renews them), leaving their leases
   * as they are: each is held again if so, lost if not, and still in doubt if no answer came (until the next check or
   * its deadline).
   */
  private verify(holds: readonly Hold[]): void {
    const pending = holds.filter((hold) => !hold.renewing && !hold.lost && !hold.ended);
    if (pending.length === 0) return;
    for (const hold of pending) hold.renewing = true;
    const keeper = this.options.keeper();
    const done = (results: readonly boolean[] | undefined): void =>
      pending.forEach((hold, i) => {
        hold.renewing = false;
        if (!results || hold.lost || hold.ended) return;
        if (results[i]) this.confirmed(hold);
        else keeper.markLost(hold, 'not-in-redis');
      });
    keeper.stillRecorded(pending).then(done, () => done(undefined));
  }

  /** Puts every hold kept in doubt (those not in doubt already), and has them renewed at once. */
  private suspect(reason: DoubtReason): void {
    const now = performance.now();
    const keeper = this.options.keeper();
    const fresh = keeper.list().filter((hold) => {
      hold.checkDeadline(now);
      return !hold.lost && !hold.ended && hold.doubtSince === undefined;
    });
    for (const hold of fresh) hold.doubtSince = now;
    for (const hold of fresh) {
      hold.changed();
      this.options.events.emit('in-doubt', { ...about(hold), reason, leftMs: Math.max(0, hold.validUntil - now) });
    }
    if (fresh.length > 0) keeper.renewSoon(fresh);
  }
}

/** The fields every event about `hold` carries. */
function about(hold: Hold): { key: string; kind: ReturnType<typeof kindOf>; mode: Hold['mode']; owner: string } {
  return { key: hold.key, kind: kindOf(hold.lock), mode: hold.mode, owner: hold.owner.id };
}
