import type { Observable } from 'rxjs';
import { requirePeer } from '../common/require-peer.js';
import { LockClosedError } from '../errors/lock-closed.error.js';
import type { LockInfo } from '../types/lock.types.js';
import { Campaign, termEnded } from './campaign.js';
import type { LeaderLogger, LeaderPort, OwnScope } from './campaign.js';
import { leaderKey, resolveCampaignOptions } from './leader-options.js';
import type { CampaignOptions, LeaderFn, LeaderInfo, StopCampaign } from './leader.types.js';

/** How often `watchLeader` looks at the leader (ms): it reports a change within this (plus one round trip). */
export const WATCH_LEADER_INTERVAL_MS = 500;

/**
 * The campaigns of one engine, and what it can tell about leaders. Leadership of `name` is the write lock
 * `leader:<name>`, renewed by the watchdog; its fencing token is the term.
 */
export class Leaders {
  private readonly campaigns = new Set<Campaign>();
  private closing = false;

  constructor(
    private readonly port: LeaderPort,
    private readonly logger: LeaderLogger,
    private readonly scope: OwnScope,
  ) {}

  /** Starts campaigning for `name`; returns the function that stops. @throws {LockConfigError} for a bad option. */
  campaign(name: string, fn: LeaderFn, options?: CampaignOptions): StopCampaign {
    const key = leaderKey(name);
    const resolved = resolveCampaignOptions(name, options);
    if (this.closing) throw new LockClosedError(key);
    // A leadership lasts and its standbys wait by design: the deadlock alarm leaves it out unless asked.
    const quiet = resolved.alarms ? this.port.activity().includeInAlarms(key) : noop;
    const campaign = new Campaign(name, key, fn, resolved, this.port, this.scope, this.logger);
    this.campaigns.add(campaign);
    void campaign.done.then(() => (this.campaigns.delete(campaign), quiet()));
    return () => campaign.stop(termEnded(name, 'the campaign was stopped'));
  }

  /** The leader of `name` as Redis has it, or `null`. */
  async leader(name: string): Promise<LeaderInfo | null> {
    return leaderOf(await this.port.inspect(leaderKey(name)));
  }

  /** A campaign of this engine leads `name` now (its lock is held). */
  isLeader(name: string): boolean {
    return [...this.campaigns].some((c) => c.name === name && c.leads);
  }

  /** Ends this engine's term of `name`, if any; resolves once released. Its campaign goes on after `restartDelayMs`. */
  async resign(name: string): Promise<boolean> {
    const resigned = await Promise.all([...this.campaigns].filter((c) => c.name === name).map((c) => c.resign()));
    return resigned.includes(true);
  }

  /**
   * The leader of `name` (or `null`): on subscription, then on every change (a new term, or no leader), looked at
   * every `WATCH_LEADER_INTERVAL_MS`. A look that fails (Redis unreachable) is skipped; completes when the engine
   * closes.
   */
  watchLeader(name: string): Observable<LeaderInfo | null> {
    const key = leaderKey(name);
    // rxjs (a peer of every Nest application) is loaded here, not on import: the command-line tool runs without it.
    const rx = requirePeer<typeof import('rxjs')>('rxjs', 'watchLeader');
    return new rx.Observable<LeaderInfo | null>((subscriber) => {
      let last: number | undefined;
      let timer: NodeJS.Timeout | undefined;
      const look = async () => {
        timer = undefined;
        try {
          const leader = leaderOf(await this.port.inspect(key));
          const term = leader?.term ?? 0;
          if (term !== last) {
            last = term;
            subscriber.next(leader);
          }
        } catch (err) {
          if (err instanceof LockClosedError) return subscriber.complete();
        }
        if (!subscriber.closed) timer = setTimeout(() => void look(), WATCH_LEADER_INTERVAL_MS);
      };
      void look();
      return () => clearTimeout(timer);
    });
  }

  /**
   * Engine shutdown: every campaign stops; a current term's signal aborts with a `LockClosedError`, its function is
   * awaited and its lock released. Never rejects.
   */
  stopAll(): Promise<void> {
    this.closing = true;
    const stops = [...this.campaigns].map((c) =>
      c.stop(
        new LockClosedError(leaderKey(c.name)),
        (term) => new LockClosedError(leaderKey(c.name), { leader: c.name, term }),
      ),
    );
    return Promise.all(stops).then(() => undefined);
  }
}

function noop(): void {}

/** The leader in `inspect`'s answer on a leadership lock. */
function leaderOf(info: LockInfo | null): LeaderInfo | null {
  const holder = info?.holders.find((h) => h.mode === 'write' && !h.finished);
  if (!holder) return null;
  return { app: holder.app, host: holder.host, pid: holder.pid, since: holder.since, term: holder.fencingToken };
}
