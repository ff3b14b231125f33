import { LockConfigError } from '../../errors/lock-config.error.js';
import type { AcquireOptions, LockMode } from '../../types/lock.types.js';
import { defaultAppName } from './app-name.js';

/** Engine-wide settings, after defaults are merged. */
export interface LockEngineSettings {
  /** Prefix of every Redis key and channel. Default `'lock:'`. */
  readonly keyPrefix: string;
  /** Default lease, in milliseconds. Default `30_000`. */
  readonly leaseMs: number;
  /** Default wait before `LockAcquireTimeoutError`, in milliseconds. Default `10_000`. */
  readonly waitTimeoutMs: number;
  /**
   * The most one Redis round trip of the library may take, in milliseconds, before it counts as failed
   * (`LockUnavailableError`, reason `'timeout'`). Default `2_000`. Bounds every call: `acquire` settles within
   * `waitTimeoutMs + commandTimeoutMs`, the other calls within `commandTimeoutMs` plus a small margin.
   */
  readonly commandTimeoutMs: number;
  /** Default watchdog renewal. Default `true`. */
  readonly autoExtend: boolean;
  /**
   * Application name recorded with each hold for `inspect`, the deadlock alarm and the board. Default:
   * `npm_package_name`, else the `name` of the nearest `package.json` above the entry script, else the process title
   * (see `defaultAppName`).
   */
  readonly appName: string;
  /** Deadlock alarm: report a hold kept longer than this, in milliseconds, once. Default `60_000`; `0` turns it off. */
  readonly holdWarningMs: number;
  /**
   * Deadlock alarm: report a waiter waiting longer than this, in milliseconds, once, with the holders. Default `5_000`;
   * `0` turns it off.
   */
  readonly waitWarningMs: number;
  /**
   * While this process holds anything (locks, permits, leadership), how often it checks that Redis still answers,
   * in milliseconds: a `PING` on each connection of the store (command and wake-up; per master in quorum mode) per
   * interval, per engine, whatever the number of holds, and none while nothing is held. A check not answered within
   * one interval puts every hold in doubt (`state: 'in-doubt'`, event `in-doubt`), so a paused or cut-off Redis is
   * noticed within two intervals. Default `400`; `0` turns the check off (holds then go in doubt only when a
   * connection reports that it dropped). At least `50` otherwise.
   */
  readonly livenessCheckMs: number;
  /**
   * Replica acknowledgement: a grant (and a renewal, and an `extend`) counts only once `WAIT` reports that many
   * replicas have it, within `timeoutMs`; otherwise it is undone and the call rejects with `LockUnavailableError`
   * (`reason: 'not-replicated'`). Default `undefined`: off.
   */
  readonly waitForReplicas: WaitForReplicas | undefined;
}

/** The `waitForReplicas` option. */
export interface WaitForReplicas {
  /** How many replicas must acknowledge: a number from 1, or `'connected'`: as many as the master has connected. */
  readonly replicas: number | 'connected';
  /** How long `WAIT` may wait for them, in milliseconds; less than `commandTimeoutMs`. Default `1_000`. */
  readonly timeoutMs?: number;
  /**
   * `true`: a grant counts only once it is in the replicas' append-only files (`WAITAOF 0 <replicas> <timeoutMs>`,
   * Redis 7.2+ / Valkey 7.2+, replicas with `appendonly yes`), not only in their memory (`WAIT`): it then survives a
   * failover followed by a restart of the new master. Default `false`.
   */
  readonly aof?: boolean;
}

/** Default `waitForReplicas.timeoutMs`, in milliseconds. */
export const DEFAULT_REPLICA_WAIT_MS = 1_000;

/** The defaults; the one place they live. */
export const DEFAULT_LOCK_SETTINGS: LockEngineSettings = Object.freeze({
  keyPrefix: 'lock:',
  leaseMs: 30_000,
  waitTimeoutMs: 10_000,
  commandTimeoutMs: 2_000,
  autoExtend: true,
  appName: defaultAppName(),
  holdWarningMs: 60_000,
  waitWarningMs: 5_000,
  livenessCheckMs: 400,
  waitForReplicas: undefined,
});

/** Default bound of `ping`, in milliseconds (the health check uses it too). */
export const DEFAULT_PING_TIMEOUT_MS = 1_000;

/** Smallest liveness check interval accepted (but `0`, off), in milliseconds. */
export const MIN_LIVENESS_CHECK_MS = 50;
/** Smallest lease accepted, in milliseconds: below it the watchdog cannot renew in time. */
export const MIN_LEASE_MS = 30;
/** Smallest command timeout accepted, in milliseconds: below it a healthy round trip can count as failed. */
export const MIN_COMMAND_TIMEOUT_MS = 10;
/** Largest lease or wait accepted, in milliseconds (about 24.8 days, the Node timer limit). */
export const MAX_DURATION_MS = 2_147_483_647;

/** Resolved per-call options. */
export interface ResolvedAcquireOptions {
  readonly mode: LockMode;
  readonly leaseMs: number;
  readonly autoExtend: boolean;
  readonly waitTimeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly fair: boolean;
  readonly ifLocked: 'wait' | 'skip';
  readonly holdAtLeastMs: number;
}

/** Throws `LockConfigError` unless `value` is a whole number of ms in range; `key` names the lock in the message. */
function checkDuration(option: string, value: unknown, min: number, allowInfinity: boolean, key?: string): number {
  const ok =
    typeof value === 'number' &&
    ((allowInfinity && value === Number.POSITIVE_INFINITY) ||
      (Number.isInteger(value) && value >= min && value <= MAX_DURATION_MS));
  if (!ok) {
    throw new LockConfigError(
      `invalid ${option}: ${String(value)}; expected an integer number of milliseconds from ${min} to ${MAX_DURATION_MS}` +
        (allowInfinity ? ' (or Infinity)' : '') +
        (key === undefined ? '' : ` (lock "${key}")`),
      option,
      key,
    );
  }
  return value;
}

/**
 * Picks the engine settings out of `input` (other fields, such as `redis`, are ignored), merges them over the
 * defaults and validates them; throws `LockConfigError` naming the option.
 */
export function resolveEngineSettings(input: Partial<LockEngineSettings> = {}): LockEngineSettings {
  const merged: Record<string, unknown> = {};
  for (const [name, fallback] of Object.entries(DEFAULT_LOCK_SETTINGS)) {
    const value = (input as Record<string, unknown>)[name];
    merged[name] = value === undefined ? fallback : value;
  }
  const settings = merged as unknown as LockEngineSettings;
  if (typeof settings.keyPrefix !== 'string' || /[{}]/.test(settings.keyPrefix)) {
    throw new LockConfigError(
      `invalid keyPrefix: ${JSON.stringify(settings.keyPrefix)}; expected a string without '{' or '}' (they form Redis Cluster hash tags)`,
      'keyPrefix',
    );
  }
  checkDuration('leaseMs', settings.leaseMs, MIN_LEASE_MS, false);
  checkDuration('waitTimeoutMs', settings.waitTimeoutMs, 0, true);
  checkDuration('commandTimeoutMs', settings.commandTimeoutMs, MIN_COMMAND_TIMEOUT_MS, false);
  checkDuration('holdWarningMs', settings.holdWarningMs, 0, false);
  checkDuration('waitWarningMs', settings.waitWarningMs, 0, false);
  if ((input as Record<string, unknown>).fencingMemoryMs !== undefined) {
    throw new LockConfigError(
      'fencingMemoryMs was removed: fencing tokens are kept by one floor per Redis hash slot (at most 16,384 small ' +
        'keys, whatever the number of keys locked), which needs no setting; remove the option',
      'fencingMemoryMs',
    );
  }
  const { livenessCheckMs: check } = settings;
  if (check !== 0 && !(Number.isInteger(check) && check >= MIN_LIVENESS_CHECK_MS && check <= MAX_DURATION_MS)) {
    throw new LockConfigError(
      `invalid livenessCheckMs: ${String(check)}; expected 0 (off) or an integer number of milliseconds from ` +
        `${MIN_LIVENESS_CHECK_MS} to ${MAX_DURATION_MS}`,
      'livenessCheckMs',
    );
  }
  if (typeof settings.autoExtend !== 'boolean') {
    throw new LockConfigError(
      `invalid autoExtend: ${String(settings.autoExtend)}; expected true or false`,
      'autoExtend',
    );
  }
  if (typeof settings.appName !== 'string') {
    throw new LockConfigError(`invalid appName: expected a string`, 'appName');
  }
  merged.waitForReplicas = resolveReplicaWait(settings.waitForReplicas, settings.commandTimeoutMs);
  return Object.freeze(settings);
}

/** `waitForReplicas` checked, with its `timeoutMs` default; throws `LockConfigError` naming the option. */
function resolveReplicaWait(value: unknown, commandTimeoutMs: number): WaitForReplicas | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new LockConfigError(
      `invalid waitForReplicas: ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}; ` +
        "expected { replicas: number | 'connected', timeoutMs?: number, aof?: boolean } or undefined (off)",
      'waitForReplicas',
    );
  }
  const o = value as Partial<WaitForReplicas>;
  const { replicas } = o;
  if (
    replicas !== 'connected' &&
    !(typeof replicas === 'number' && Number.isInteger(replicas) && replicas >= 1 && replicas <= 1_000)
  ) {
    throw new LockConfigError(
      `invalid waitForReplicas.replicas: ${String(replicas)}; expected an integer from 1 to 1000, or 'connected'`,
      'waitForReplicas.replicas',
    );
  }
  const timeoutMs = o.timeoutMs ?? Math.min(DEFAULT_REPLICA_WAIT_MS, commandTimeoutMs - 1);
  checkDuration('waitForReplicas.timeoutMs', timeoutMs, 1, false);
  if (timeoutMs >= commandTimeoutMs) {
    throw new LockConfigError(
      `invalid waitForReplicas.timeoutMs: ${timeoutMs}; it must be less than commandTimeoutMs (${commandTimeoutMs}), ` +
        'which bounds the whole round trip, WAIT included: lower waitForReplicas.timeoutMs or raise commandTimeoutMs',
      'waitForReplicas.timeoutMs',
    );
  }
  if (o.aof !== undefined && typeof o.aof !== 'boolean') {
    throw new LockConfigError(
      `invalid waitForReplicas.aof: ${JSON.stringify(o.aof)}; expected true (WAITAOF) or false (WAIT, the default)`,
      'waitForReplicas.aof',
    );
  }
  return Object.freeze(o.aof ? { replicas, timeoutMs, aof: true } : { replicas, timeoutMs });
}

/** Merges per-call options over the engine settings; throws `LockConfigError` naming the option and key. */
export function resolveAcquireOptions(
  settings: LockEngineSettings,
  options: AcquireOptions | undefined,
  key: string,
): ResolvedAcquireOptions {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new LockConfigError(
      `invalid options for "${key}": ${String(options)}; expected an object of AcquireOptions`,
      'options',
      key,
    );
  }
  const o = options ?? {};
  const mode = o.mode === undefined ? 'write' : o.mode;
  if (mode !== 'read' && mode !== 'write') {
    throw new LockConfigError(`invalid mode for "${key}": ${String(mode)}; expected 'read' or 'write'`, 'mode', key);
  }
  const leaseMs = checkDuration('leaseMs', o.leaseMs ?? settings.leaseMs, MIN_LEASE_MS, false, key);
  const waitTimeoutMs = checkDuration('waitTimeoutMs', o.waitTimeoutMs ?? settings.waitTimeoutMs, 0, true, key);
  const autoExtend = o.autoExtend ?? settings.autoExtend;
  if (typeof autoExtend !== 'boolean') {
    throw new LockConfigError(`invalid autoExtend for "${key}": expected true or false`, 'autoExtend', key);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new LockConfigError(`invalid signal for "${key}": expected an AbortSignal`, 'signal', key);
  }
  const fair = o.fair ?? false;
  if (typeof fair !== 'boolean') {
    throw new LockConfigError(`invalid fair for "${key}": expected true or false`, 'fair', key);
  }
  const ifLocked = o.ifLocked ?? 'wait';
  if (ifLocked !== 'wait' && ifLocked !== 'skip') {
    throw new LockConfigError(
      `invalid ifLocked for "${key}": ${String(ifLocked)}; expected 'wait' or 'skip'`,
      'ifLocked',
      key,
    );
  }
  const holdAtLeastMs = checkDuration('holdAtLeastMs', o.holdAtLeastMs ?? 0, 0, false, key);
  // The first lease covers the whole minimum hold: a holder that dies right after a short run keeps it taken.
  return {
    mode,
    leaseMs: Math.max(leaseMs, holdAtLeastMs),
    autoExtend,
    waitTimeoutMs,
    signal: o.signal,
    fair,
    ifLocked,
    holdAtLeastMs,
  };
}
