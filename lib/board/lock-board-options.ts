import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { LockConfigError } from '../errors/lock-config.error.js';
import { DEFAULT_RECENT_EVENTS } from './recent-events.js';
import { LOAD_HISTORY_WINDOW_MS } from './load-history.js';

/** A guard for the board: a class (resolved by Nest in the board's module) or an instance. */
export type LockBoardGuard = CanActivate | Type<CanActivate>;

/** What the board records of a force release, for `onForceRelease` (and its log line). */
export interface LockBoardForceRelease {
  readonly kind: string;
  readonly key: string;
  /** Whether it was held (and so freed). */
  readonly held: boolean;
  /**
   * The request: method and URL as the application saw them, client address, user agent, and `request.user` when a
   * guard set it.
   */
  readonly request: {
    readonly method: string;
    readonly url: string;
    readonly ip: string;
    readonly userAgent: string;
    readonly user: string;
  };
  readonly at: Date;
}

/** Options of the board that can come from a factory (`forRootAsync`). */
export interface LockBoardSettingsOptions {
  /**
   * Lets the page and the JSON API free a held key whoever holds it (a POST with a custom header and a same-origin
   * check, logged, reported to `onForceRelease`). Default `false`: the board is read-only.
   */
  readonly allowForceRelease?: boolean;
  /**
   * How often the page refreshes, and how long one snapshot is shared by every viewer, in milliseconds. Default
   * `1_000`.
   */
  readonly refreshMs?: number;
  /** The most held keys read per snapshot; the others are counted ("N more, narrow the filter"). Default `500`. */
  readonly maxKeys?: number;
  /** `COUNT` of each SCAN call (keyspace slots Redis visits per call). Default `1_000`. */
  readonly scanCount?: number;
  /**
   * Time budget of one scan over every master, in milliseconds; past it the snapshot is marked incomplete. Default
   * `1_000`.
   */
  readonly scanBudgetMs?: number;
  /** Recent events of this process kept for the page. Default `50`. */
  readonly recentEvents?: number;
  /**
   * How often this instance samples its holds and waiters per kind for the page's chart, in milliseconds; the samples
   * of the last fifteen minutes are kept (at most 900). Default `10_000` (90 samples). `0`: no samples kept; the
   * page then charts only what it saw while open.
   */
  readonly historySampleMs?: number;
  /** Called after every force release (an audit hook); what it throws or rejects with is logged, never answered. */
  readonly onForceRelease?: (event: LockBoardForceRelease) => void | Promise<void>;
}

/** Options fixed when the module is declared: they shape its routes. */
export interface LockBoardRouteOptions {
  /** Path of the board, under the application's global prefix (e.g. `'admin/locks'`). Default `'locks'`. */
  readonly path?: string;
  /**
   * Guards for the page, its files, the JSON and every action (on top of global guards). Classes are resolved in the
   * board's module: give `imports` for their dependencies that are not global.
   */
  readonly guards?: readonly LockBoardGuard[];
  /** Modules the guards need (their providers must be exported by them). */
  readonly imports?: ModuleMetadata['imports'];
}

/** Options of `LockBoardModule.forRoot`. */
export interface LockBoardModuleOptions extends LockBoardRouteOptions, LockBoardSettingsOptions {}

/** Options of `LockBoardModule.forRootAsync`: the routes are fixed, the rest comes from the factory. */
export interface LockBoardModuleAsyncOptions extends LockBoardRouteOptions {
  // The factory's arguments are whatever `inject` lists, as in Nest's own `useFactory`.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly useFactory: (...args: any[]) => LockBoardSettingsOptions | Promise<LockBoardSettingsOptions>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly inject?: any[];
}

/** The settings in force, defaults merged. */
export interface LockBoardSettings {
  readonly allowForceRelease: boolean;
  readonly refreshMs: number;
  readonly maxKeys: number;
  readonly scanCount: number;
  readonly scanBudgetMs: number;
  readonly recentEvents: number;
  readonly historySampleMs: number;
  readonly onForceRelease: LockBoardSettingsOptions['onForceRelease'];
}

/** Defaults of the board's options; the one place they live. */
export const DEFAULT_LOCK_BOARD_SETTINGS = Object.freeze({
  path: 'locks',
  allowForceRelease: false,
  refreshMs: 1_000,
  maxKeys: 500,
  scanCount: 1_000,
  scanBudgetMs: 1_000,
  recentEvents: DEFAULT_RECENT_EVENTS,
  historySampleMs: 10_000,
});

const SEGMENT = /^[A-Za-z0-9._~-]+$/;

/** The board's path without leading or trailing slashes; throws `LockConfigError` naming `path`. */
export function resolveBoardPath(path: unknown = DEFAULT_LOCK_BOARD_SETTINGS.path): string {
  const trimmed = typeof path === 'string' ? path.replace(/^\/+|\/+$/g, '') : '';
  if (!trimmed.split('/').every((s) => SEGMENT.test(s))) {
    throw new LockConfigError(
      `invalid path: ${JSON.stringify(path)}; expected one or more segments of letters, digits, '.', '_', '~' or '-' separated by '/', e.g. 'admin/locks'`,
      'path',
    );
  }
  return trimmed;
}

/** Merges and checks the settings; throws `LockConfigError` naming the option. */
export function resolveBoardSettings(options: LockBoardSettingsOptions = {}): LockBoardSettings {
  const d = DEFAULT_LOCK_BOARD_SETTINGS;
  const allowForceRelease = options.allowForceRelease ?? d.allowForceRelease;
  if (typeof allowForceRelease !== 'boolean')
    throw new LockConfigError(
      `invalid allowForceRelease: ${String(allowForceRelease)}; expected true or false`,
      'allowForceRelease',
    );
  const count = (name: string, value: unknown, min: number, max: number): number => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new LockConfigError(`invalid ${name}: ${String(value)}; expected an integer from ${min} to ${max}`, name);
    }
    return value;
  };
  const sampleMs = (value: unknown): number =>
    value === 0 ? 0 : count('historySampleMs', value, 100, LOAD_HISTORY_WINDOW_MS);
  const onForceRelease = options.onForceRelease;
  if (onForceRelease !== undefined && typeof onForceRelease !== 'function') {
    throw new LockConfigError('invalid onForceRelease: expected a function', 'onForceRelease');
  }
  return Object.freeze({
    allowForceRelease,
    refreshMs: count('refreshMs', options.refreshMs ?? d.refreshMs, 100, 600_000),
    maxKeys: count('maxKeys', options.maxKeys ?? d.maxKeys, 1, 100_000),
    scanCount: count('scanCount', options.scanCount ?? d.scanCount, 10, 100_000),
    scanBudgetMs: count('scanBudgetMs', options.scanBudgetMs ?? d.scanBudgetMs, 10, 600_000),
    recentEvents: count('recentEvents', options.recentEvents ?? d.recentEvents, 0, 10_000),
    historySampleMs: sampleMs(options.historySampleMs ?? d.historySampleMs),
    onForceRelease,
  });
}
