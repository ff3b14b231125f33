import { hostname } from 'node:os';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LockConfigError } from '../errors/lock-config.error.js';
import { LockService } from '../nest/lock.service.js';
import { BOARD_KINDS } from '../read-model/kinds.js';
import type { BoardEngine } from '../read-model/kinds.js';
import { RecentEvents } from './recent-events.js';
import { FleetFeed } from './fleet-feed.js';
import type { BoardFleet } from './board-fleet.types.js';
import type { BoardEntry, BoardEvent, BoardSnapshot } from '../read-model/snapshot.types.js';
import { BoardSnapshots } from '../read-model/snapshots.js';
import { validateLockKey } from '../store/lock-key.js';
import type { LockBoardForceRelease, LockBoardSettings } from './lock-board-options.js';
import { errorText } from '../common/error-text.js';

/** Injection token of a board's settings (defaults merged). */
export const LOCK_BOARD_SETTINGS = Symbol('nest-redis-locks.board-settings');

/** What the page reads on each refresh. */
export interface BoardView {
  readonly snapshot: BoardSnapshot;
  readonly events: readonly BoardEvent[];
  /** The instance that answered. */
  readonly instance: { readonly host: string; readonly pid: number; readonly app: string };
  readonly allowForceRelease: boolean;
  readonly refreshMs: number;
  readonly kinds: readonly string[];
  /**
   * Holds, waiters, holds in doubt and deadlock alarms per kind over the history there is (up to fifteen minutes), of
   * every instance that publishes its samples and in total.
   */
  readonly fleet: BoardFleet;
  /** Holds in doubt now, of this instance and as the other instances last published them (key and owner). */
  readonly inDoubt: readonly { readonly key: string; readonly owner: string }[];
}

/** The outcome of a force release asked by a request. */
export type ForceReleaseOutcome =
  | { readonly ok: true; readonly held: boolean }
  | { readonly ok: false; readonly status: 400 | 403; readonly message: string };

/**
 * One board's state: the shared snapshots, the recent events of this process, and force release. Reads the lock
 * engine of the application's `RedisLockModule` (found wherever it is imported).
 */
@Injectable()
export class LockBoardService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('LockBoard');
  private engine: BoardEngine | undefined;
  private snapshots: BoardSnapshots | undefined;
  private readonly events: RecentEvents;
  private readonly feed: FleetFeed;

  constructor(
    @Inject(LOCK_BOARD_SETTINGS) readonly settings: LockBoardSettings,
    private readonly moduleRef: ModuleRef,
  ) {
    this.events = new RecentEvents(settings.recentEvents);
    this.feed = new FleetFeed(settings.historySampleMs, settings.refreshMs);
  }

  onModuleInit(): void {
    let locks: LockService;
    try {
      locks = this.moduleRef.get(LockService, { strict: false });
    } catch {
      throw new LockConfigError(
        'LockBoardModule needs RedisLockModule: import RedisLockModule.forRoot(...) (or forRootAsync) in the application',
        'RedisLockModule',
      );
    }
    const engine = locks.engine;
    this.engine = engine;
    this.snapshots = new BoardSnapshots(engine, {
      refreshMs: this.settings.refreshMs,
      maxKeys: this.settings.maxKeys,
      scanCount: this.settings.scanCount,
      scanBudgetMs: this.settings.scanBudgetMs,
      holdWarningMs: engine.settings.holdWarningMs,
      waitWarningMs: engine.settings.waitWarningMs,
      kinds: BOARD_KINDS,
    });
    if (this.settings.recentEvents > 0) this.events.attach(engine);
    this.feed.attach(locks.engine);
  }

  /** Stops recording, and removes this instance's samples from Redis (before the lock module closes its connection). */
  async onModuleDestroy(): Promise<void> {
    this.events.detach();
    await this.feed.detach();
  }

  /** The shared snapshot for `filter` with this instance's recent events. */
  async view(filter: string): Promise<BoardView> {
    const [snapshot, fleet] = await Promise.all([this.ready().snapshots.get(filter), this.feed.view()]);
    return {
      snapshot,
      events: this.events.list(),
      instance: this.instance(),
      allowForceRelease: this.settings.allowForceRelease,
      refreshMs: this.settings.refreshMs,
      kinds: BOARD_KINDS.map((k) => k.name),
      fleet,
      inDoubt: fleet.instances.flatMap((i) => i.inDoubt),
    };
  }

  /** The instance answering (host, pid, app name). */
  instance(): BoardView['instance'] {
    return { host: this.hostname, pid: process.pid, app: this.ready().engine.settings.appName };
  }

  /** The shared snapshot for `filter`. */
  snapshot(filter: string): Promise<BoardSnapshot> {
    return this.ready().snapshots.get(filter);
  }

  /** The recent events of this instance, newest first. */
  recentEvents(): readonly BoardEvent[] {
    return this.events.list();
  }

  /** One key, read now. */
  detail(kind: string, key: string): Promise<BoardEntry | null> {
    return this.ready().snapshots.detail(kind, key);
  }

  /** Frees `key` when force release is allowed; logs it, records it and reports it to `onForceRelease`. */
  async forceRelease(
    kindName: string,
    key: unknown,
    scope: string | undefined,
    request: LockBoardForceRelease['request'],
  ): Promise<ForceReleaseOutcome> {
    if (!this.settings.allowForceRelease) {
      return {
        ok: false,
        status: 403,
        message: 'force release is off: set allowForceRelease: true in LockBoardModule.forRoot to allow it',
      };
    }
    const kind = BOARD_KINDS.find((k) => k.name === kindName);
    if (!kind)
      return {
        ok: false,
        status: 400,
        message: `unknown kind ${JSON.stringify(kindName)}; expected one of ${BOARD_KINDS.map((k) => k.name).join(', ')}`,
      };
    try {
      validateLockKey(key);
    } catch (err) {
      return { ok: false, status: 400, message: (err as Error).message };
    }
    const { engine, snapshots } = this.ready();
    const held = await kind.forceRelease(key as string, engine, scope);
    snapshots.invalidate();
    const who = [request.user && `user ${request.user}`, `from ${request.ip || 'unknown address'}`]
      .filter(Boolean)
      .join(' ');
    this.logger.warn(
      `force release of ${kind.name} ${JSON.stringify(key)} ` +
        `(${held ? 'it was held: holders lose it at their next renewal' : 'it was not held'}) ` +
        `by ${request.method} ${request.url} ${who}, user agent ${JSON.stringify(request.userAgent)}`,
    );
    this.events.add({
      type: 'force-released',
      key: key as string,
      mode: kind.name,
      owner: request.user || request.ip,
      at: new Date().toISOString(),
      detail: held ? 'freed' : 'was not held',
    });
    const hook = this.settings.onForceRelease;
    if (hook) {
      Promise.resolve()
        .then(() => hook({ kind: kind.name, key: key as string, held, request, at: new Date() }))
        .catch((err: unknown) => this.logger.error(`onForceRelease threw: ${errorText(err)}`));
    }
    return { ok: true, held };
  }

  private readonly hostname = hostname();

  private ready(): { engine: BoardEngine; snapshots: BoardSnapshots } {
    if (!this.engine || !this.snapshots) throw new Error('the lock board is not initialised yet');
    return { engine: this.engine, snapshots: this.snapshots };
  }
}
