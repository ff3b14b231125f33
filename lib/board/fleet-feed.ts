import { hostname } from 'node:os';
import type { RedisDriver } from '../redis/driver/redis-driver.js';
import { fleetSeries } from './fleet-series.js';
import type { BoardFleet } from './board-fleet.types.js';
import { FleetStore, MAX_DOUBT_LISTED } from './fleet-store.js';
import type { FleetInstanceInfo, FleetInstanceRecord } from './fleet-store.js';
import { LoadHistory } from './load-history.js';
import type { HistoryEngine } from './load-history.js';
import type { LockEngine } from '../locking/engine/lock-engine.js';
import { errorText } from '../common/error-text.js';

/** What the feed needs of the engine (internal members spelled out, so the emitted types do not name them). */
export type FeedEngine = HistoryEngine &
  Pick<LockEngine, 'settings'> & { readonly instanceId: string; scanConnections(): readonly RedisDriver[] };

/**
 * The board's charts for the whole fleet: this instance samples its load (`LoadHistory`) and publishes each sample to
 * Redis (`FleetStore`); a board reads every instance's record, at most once per `refreshMs` whatever the number of
 * viewers, and merges them on one grid (`fleetSeries`). A read that fails leaves the charts with this instance only,
 * and says why.
 */
export class FleetFeed {
  private readonly history: LoadHistory;
  private store: FleetStore | undefined;
  private engine: FeedEngine | undefined;
  private cached: { at: number; fleet: Promise<{ records: FleetInstanceRecord[]; error?: string }> } | undefined;
  private readonly host = hostname();

  constructor(
    private readonly sampleMs: number,
    private readonly refreshMs: number,
  ) {
    this.history = new LoadHistory(sampleMs, (sample) => void this.store?.publish(sample));
  }

  /** Starts sampling `engine` and, when it samples, publishing. */
  attach(engine: FeedEngine): void {
    this.engine = engine;
    if (this.sampleMs > 0) {
      this.store = new FleetStore(
        () => engine.scanConnections()[0],
        engine.settings.keyPrefix,
        () => this.info(),
        this.history.capacity,
        engine.settings.commandTimeoutMs,
      );
    }
    this.history.attach(engine);
  }

  /** Stops sampling and removes this instance's record from Redis (bounded). */
  async detach(): Promise<void> {
    this.history.detach();
    await this.store?.withdraw();
  }

  /** The fleet's load now: every instance's series and the total, this instance's fresh. */
  async view(): Promise<BoardFleet> {
    const asked = Date.now();
    if (!this.cached || asked - this.cached.at >= this.refreshMs) this.cached = { at: asked, fleet: this.readFleet() };
    const { records, error } = await this.cached.fleet;
    // The grid ends at this instance's numbers now, so that its last point and its row say the same.
    const current = this.history.now();
    const now = current.at;
    const self = { ...this.info(), samples: this.history.samples(now), now: current };
    const writeError = this.store?.lastWriteError;
    const why = error ?? (writeError ? `this instance's samples could not be written: ${writeError}` : undefined);
    return fleetSeries(records, self, now, why);
  }

  private async readFleet(): Promise<{ records: FleetInstanceRecord[]; error?: string }> {
    if (!this.store) return { records: [] };
    try {
      return { records: await this.store.read() };
    } catch (err) {
      return {
        records: [],
        error: `the other instances' samples could not be read: ${errorText(err)}`,
      };
    }
  }

  private info(): FleetInstanceInfo {
    const engine = this.engine;
    return {
      id: engine?.instanceId ?? '',
      host: this.host,
      pid: process.pid,
      app: engine?.settings.appName ?? '',
      sampleMs: this.sampleMs,
      inDoubt: engine ? engine.activity().inDoubt(MAX_DOUBT_LISTED) : [],
    };
  }
}
