import { performance } from 'node:perf_hooks';
import type { BoardEngine, BoardKind, BoardReadContext } from './kinds.js';
import type { BoardEntry, BoardSnapshot } from './snapshot.types.js';
import { globEscape, scanKeys } from './key-scan.js';
import { leadersOf } from './leader-rows.js';
import { errorText } from '../common/error-text.js';

/** How snapshots are taken and shared (the board's and the CLI's options, defaults merged). */
export interface SnapshotSettings {
  /** How long a snapshot is served to every viewer before a new one is taken, in milliseconds. */
  readonly refreshMs: number;
  /** The most held keys read per snapshot; the rest are counted ("N more, narrow the filter"). */
  readonly maxKeys: number;
  /** `COUNT` of each SCAN call. */
  readonly scanCount: number;
  /** Time budget of one scan over every master, in milliseconds. */
  readonly scanBudgetMs: number;
  /** Alarm thresholds, in milliseconds (`0`: off). */
  readonly holdWarningMs: number;
  readonly waitWarningMs: number;
  /** The kinds listed (see `BOARD_KINDS`). */
  readonly kinds: readonly BoardKind[];
}

/** Distinct filters whose snapshots are kept at once. */
const MAX_CACHED_FILTERS = 16;

interface Cached {
  readonly at: number;
  readonly snapshot: Promise<BoardSnapshot>;
}

/**
 * The snapshots of one board (or CLI): at most one per filter and refresh interval, shared by every viewer and the
 * JSON endpoint, and at most one scan in Redis at a time (viewers asking for other filters queue behind it). A filter
 * is answered from the unfiltered snapshot, without a scan of its own, while that one is complete and not capped.
 * Nothing is read while nobody asks.
 */
export class BoardSnapshots {
  private readonly cache = new Map<string, Cached>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly engine: BoardEngine,
    readonly settings: SnapshotSettings,
  ) {}

  /** The snapshot of the held keys whose key starts with `filter` (`''`: all), at most `refreshMs` old. */
  get(filter = ''): Promise<BoardSnapshot> {
    const now = performance.now();
    const fresh = (c: Cached | undefined): c is Cached => c !== undefined && now - c.at < this.settings.refreshMs;
    const own = this.cache.get(filter);
    if (fresh(own)) return own.snapshot;
    const all = this.cache.get('');
    if (filter !== '' && fresh(all)) {
      const derived = all.snapshot.then((s) =>
        s.complete && s.more === 0 && !s.error ? narrow(s, filter) : undefined,
      );
      return derived.then((s) => s ?? this.take(filter));
    }
    return this.take(filter);
  }

  /** One key of one kind, read now (one bounded read, not a scan); `null` when it is not held. */
  async detail(kindName: string, key: string): Promise<BoardEntry | null> {
    const kind = this.settings.kinds.find((k) => k.name === kindName);
    if (!kind) return null;
    const [entry] = await kind.read([key], this.readContext());
    return entry ?? null;
  }

  /** Forgets every snapshot (after a force release, so the next view shows it). */
  invalidate(): void {
    this.cache.clear();
  }

  private take(filter: string): Promise<BoardSnapshot> {
    const entry = this.cache.get(filter);
    // A scan for this filter already queued or running: share it.
    if (entry && performance.now() - entry.at < this.settings.refreshMs) return entry.snapshot;
    const snapshot = this.queue.then(() => this.scanAndRead(filter));
    this.queue = snapshot.catch(() => undefined);
    this.cache.delete(filter);
    this.cache.set(filter, { at: performance.now(), snapshot });
    // Stamp it when it is done: a slow scan must not leave viewers a snapshot that expires before it arrives.
    void snapshot.then(() => {
      if (this.cache.get(filter)?.snapshot === snapshot) this.cache.set(filter, { at: performance.now(), snapshot });
    });
    while (this.cache.size > MAX_CACHED_FILTERS) this.cache.delete(this.cache.keys().next().value as string);
    return snapshot;
  }

  private async scanAndRead(filter: string): Promise<BoardSnapshot> {
    const started = performance.now();
    const { engine, settings } = this;
    const base = {
      keyPrefix: engine.settings.keyPrefix,
      filter,
      holdWarningMs: settings.holdWarningMs,
      waitWarningMs: settings.waitWarningMs,
    };
    const finish = (
      rest: Omit<BoardSnapshot, keyof typeof base | 'takenAt' | 'durationMs' | 'leaders'>,
    ): BoardSnapshot => ({
      takenAt: new Date().toISOString(),
      durationMs: Math.round(performance.now() - started),
      ...base,
      ...rest,
      leaders: leadersOf(rest.entries),
    });
    const connections = engine.scanConnections();
    if (connections.length === 0) {
      return finish({
        entries: [],
        found: 0,
        more: 0,
        complete: false,
        cut: null,
        failures: [],
        error: 'this lock store keeps no keys in Redis (testing module): nothing to list',
      });
    }
    const suffixes = new Set(settings.kinds.map((k) => k.nameSuffix ?? ''));
    const suffix = suffixes.size === 1 ? [...suffixes][0] : '';
    const prefix = engine.settings.keyPrefix;
    const pattern = `${globEscape(prefix)}{${globEscape(filter)}*${globEscape(suffix)}`;
    const scan = await scanKeys(connections, pattern, {
      count: settings.scanCount,
      budgetMs: settings.scanBudgetMs,
      callTimeoutMs: engine.settings.commandTimeoutMs,
      // Reading is capped at maxKeys: scanning on only to count the rest would cost Redis as much as the whole
      // keyspace.
      stopAfter: settings.maxKeys,
    });
    if (scan.masters === 0 || scan.failures.length >= scan.masters) {
      const error = scan.failures.map((f) => `${f.master}: ${f.error}`).join('; ') || 'no Redis master to scan';
      // An ACL refusal (NOPERM) is an answer: Redis was reached, and said no.
      const denied = scan.failures.length > 0 && scan.failures.every((f) => /\bNOPERM\b/.test(String(f.error)));
      return finish({
        entries: [],
        found: 0,
        more: 0,
        complete: false,
        cut: null,
        failures: scan.failures,
        error: denied
          ? `Redis refused the key scan: permission denied (${String(scan.failures[0].error)}) on ` +
            scan.failures.map((f) => f.master).join(', ')
          : `Redis cannot be reached: ${error}`,
      });
    }
    const found: { kind: BoardKind; key: string }[] = [];
    for (const name of scan.names) {
      if (!name.startsWith(prefix)) continue;
      const rest = name.slice(prefix.length);
      for (const kind of settings.kinds) {
        const key = kind.keyOf(rest);
        if (key === undefined) continue;
        if (key.startsWith(filter)) found.push({ kind, key });
        break;
      }
    }
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.kind.name < b.kind.name ? -1 : 1));
    const chosen = found.slice(0, settings.maxKeys);
    try {
      this.clockOffsetMs = scan.clockOffsetMs;
      const context = this.readContext();
      const entries: BoardEntry[] = [];
      for (const kind of settings.kinds) {
        const keys = chosen.filter((f) => f.kind === kind).map((f) => f.key);
        if (keys.length > 0) for (const e of await kind.read(keys, context)) if (e) entries.push(e);
      }
      entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      return finish({
        entries,
        found: found.length,
        more: found.length - chosen.length,
        complete: scan.complete,
        cut: scan.cut ?? null,
        failures: scan.failures,
      });
    } catch (err) {
      const error = errorText(err);
      return finish({
        entries: [],
        found: found.length,
        more: 0,
        complete: false,
        cut: scan.cut ?? null,
        failures: scan.failures,
        error,
      });
    }
  }

  /** Redis time minus this process's clock, in milliseconds, as the last scan measured it. */
  private clockOffsetMs = 0;

  private readContext(): BoardReadContext {
    const { holdWarningMs, waitWarningMs } = this.settings;
    return { engine: this.engine, redisNowMs: Date.now() + this.clockOffsetMs, holdWarningMs, waitWarningMs };
  }
}

/** The entries of `snapshot` whose key starts with `filter`, as a snapshot of that filter. */
function narrow(snapshot: BoardSnapshot, filter: string): BoardSnapshot {
  const entries = snapshot.entries.filter((e) => e.key.startsWith(filter));
  return { ...snapshot, filter, entries, leaders: leadersOf(entries), found: entries.length, more: 0 };
}
