import { LockConfigError } from '../errors/lock-config.error.js';
import { validateLockKey } from '../store/lock-key.js';
import type { CampaignOptions } from './leader.types.js';

/**
 * The defaults of `CampaignOptions`, merged here and nowhere else: a 10 s lease; 1 s before campaigning again; a
 * shutdown waits 10 s at most for the leader's function (then releases and leaves it behind, logged); and no deadlock
 * alarm for the leadership (`alarms: false`: a leader holds, and its standbys wait, by design; `true` reports both
 * like any lock's, and has the board highlight it).
 */
export const DEFAULT_CAMPAIGN_OPTIONS: Readonly<Required<CampaignOptions>> = Object.freeze({
  leaseMs: 10_000,
  restartDelayMs: 1_000,
  shutdownTimeoutMs: 10_000,
  alarms: false,
});

/** Shortest leadership lease accepted (ms): the watchdog renews every third of it. */
const MIN_LEADER_LEASE_MS = 100;
/** Longest lease or delay accepted (ms): the Node timer limit. */
const MAX_MS = 2_147_483_647;

/** What every leadership's lock key starts with (`leader:<name>`). */
export const LEADER_KEY_PREFIX = 'leader:';

/**
 * The lock key of leadership `name`: `leader:<name>`.
 * @throws {LockConfigError} when `name` is not a non-empty string.
 * @throws {LockKeyError} when `leader:<name>` is not a valid lock key.
 */
export function leaderKey(name: string): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new LockConfigError(`invalid leader name ${JSON.stringify(name)}: expected a non-empty string`, 'name');
  }
  return validateLockKey(`${LEADER_KEY_PREFIX}${name}`);
}

/** `options` over the defaults, checked. @throws {LockConfigError} naming the option and the leader. */
export function resolveCampaignOptions(name: string, options: CampaignOptions = {}): Required<CampaignOptions> {
  const resolved = { ...DEFAULT_CAMPAIGN_OPTIONS };
  for (const [option, min] of [
    ['leaseMs', MIN_LEADER_LEASE_MS],
    ['restartDelayMs', 0],
    ['shutdownTimeoutMs', 0],
  ] as const) {
    const value: unknown = options[option];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_MS) {
      throw new LockConfigError(
        `invalid ${option} for leader "${name}": ${JSON.stringify(value) ?? typeof value}; expected an integer number of milliseconds from ${min} to ${MAX_MS}`,
        option,
        `leader:${name}`,
      );
    }
    resolved[option] = value;
  }
  if (options.alarms !== undefined) {
    if (typeof options.alarms !== 'boolean') {
      throw new LockConfigError(
        `invalid alarms for leader "${name}": ${JSON.stringify(options.alarms) ?? typeof options.alarms}; expected ` +
          'true (the deadlock alarm and the board report this leadership) or false (the default)',
        'alarms',
        `leader:${name}`,
      );
    }
    resolved.alarms = options.alarms;
  }
  return resolved;
}
