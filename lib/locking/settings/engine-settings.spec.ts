import { describe, expect, it } from '@jest/globals';
import { LockConfigError } from '../../errors/lock-config.error.js';
import type { AcquireOptions } from '../../types/lock.types.js';
import {
  DEFAULT_LOCK_SETTINGS,
  MAX_DURATION_MS,
  MIN_COMMAND_TIMEOUT_MS,
  MIN_LEASE_MS,
  MIN_LIVENESS_CHECK_MS,
  resolveAcquireOptions,
  resolveEngineSettings,
} from './engine-settings.js';
import type { LockEngineSettings } from './engine-settings.js';
import { defaultAppName } from './app-name.js';

/** The error `fn` throws (fails the test when it throws nothing). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw, got none');
}

const SETTING_NAMES = [
  'appName',
  'autoExtend',
  'commandTimeoutMs',
  'holdWarningMs',
  'keyPrefix',
  'leaseMs',
  'livenessCheckMs',
  'waitForReplicas',
  'waitTimeoutMs',
  'waitWarningMs',
];

describe('DEFAULT_LOCK_SETTINGS', () => {
  it('holds the documented defaults', () => {
    expect(DEFAULT_LOCK_SETTINGS).toEqual({
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
    expect(Object.isFrozen(DEFAULT_LOCK_SETTINGS)).toBe(true);
  });

  it('has the documented bounds', () => {
    expect(MIN_LEASE_MS).toBe(30);
    expect(MIN_COMMAND_TIMEOUT_MS).toBe(10);
    expect(MIN_LIVENESS_CHECK_MS).toBe(50);
    expect(MAX_DURATION_MS).toBe(2_147_483_647);
  });
});

describe('resolveEngineSettings', () => {
  it('returns the defaults when given nothing', () => {
    expect(resolveEngineSettings()).toEqual(DEFAULT_LOCK_SETTINGS);
    expect(resolveEngineSettings({})).toEqual(DEFAULT_LOCK_SETTINGS);
  });

  it('merges given values over the defaults, one by one', () => {
    expect(resolveEngineSettings({ leaseMs: 5_000, keyPrefix: 'app:' })).toEqual({
      ...DEFAULT_LOCK_SETTINGS,
      leaseMs: 5_000,
      keyPrefix: 'app:',
    });
  });

  it('takes every setting when all are given', () => {
    const all: LockEngineSettings = {
      keyPrefix: '',
      leaseMs: 30,
      waitTimeoutMs: 0,
      commandTimeoutMs: 10,
      autoExtend: false,
      appName: 'orders',
      holdWarningMs: 0,
      waitWarningMs: 0,
      livenessCheckMs: 0,
      waitForReplicas: { replicas: 'connected', timeoutMs: 9 },
    };
    expect(resolveEngineSettings(all)).toEqual(all);
  });

  it('refuses the removed fencingMemoryMs, naming it', () => {
    expect(() => resolveEngineSettings({ fencingMemoryMs: 60_000 } as Partial<LockEngineSettings>)).toThrow(
      /fencingMemoryMs was removed.*remove the option/,
    );
  });

  it('treats undefined as unset', () => {
    expect(resolveEngineSettings({ leaseMs: undefined, autoExtend: undefined })).toEqual(DEFAULT_LOCK_SETTINGS);
  });

  it('ignores other fields and does not copy them into the settings', () => {
    const input = { redis: { host: 'localhost' }, logger: console, keyPrefix: 'x:', subscriptionLingerMs: 5 };
    const settings = resolveEngineSettings(input as Partial<LockEngineSettings>);
    expect(Object.keys(settings).sort()).toEqual(SETTING_NAMES);
    expect(settings).toEqual({ ...DEFAULT_LOCK_SETTINGS, keyPrefix: 'x:' });
  });

  it('returns a frozen object', () => {
    const settings = resolveEngineSettings({ leaseMs: 1_000 });
    expect(Object.isFrozen(settings)).toBe(true);
    expect(() => {
      (settings as { leaseMs: number }).leaseMs = 5;
    }).toThrow(TypeError);
  });

  it.each<[string, unknown]>([
    ['leaseMs', MIN_LEASE_MS],
    ['leaseMs', MAX_DURATION_MS],
    ['waitTimeoutMs', 0],
    ['waitTimeoutMs', MAX_DURATION_MS],
    ['waitTimeoutMs', Number.POSITIVE_INFINITY],
    ['holdWarningMs', 0],
    ['commandTimeoutMs', MIN_COMMAND_TIMEOUT_MS],
    ['commandTimeoutMs', 60_000],
    ['waitWarningMs', MAX_DURATION_MS],
    ['keyPrefix', ''],
    ['keyPrefix', 'my-app:locks:'],
    ['appName', ''],
    ['livenessCheckMs', 0],
    ['livenessCheckMs', MIN_LIVENESS_CHECK_MS],
    ['livenessCheckMs', 5_000],
  ])('accepts %s = %p', (option, value) => {
    expect(resolveEngineSettings({ [option]: value })).toEqual({ ...DEFAULT_LOCK_SETTINGS, [option]: value });
  });

  it.each<[string, unknown]>([
    ['leaseMs', 29],
    ['leaseMs', 0],
    ['leaseMs', -1],
    ['leaseMs', 1000.5],
    ['leaseMs', MAX_DURATION_MS + 1],
    ['leaseMs', Number.NaN],
    ['leaseMs', Number.POSITIVE_INFINITY],
    ['leaseMs', '1000'],
    ['leaseMs', null],
    ['waitTimeoutMs', -1],
    ['waitTimeoutMs', 0.5],
    ['waitTimeoutMs', Number.NaN],
    ['waitTimeoutMs', Number.NEGATIVE_INFINITY],
    ['waitTimeoutMs', MAX_DURATION_MS + 1],
    ['waitTimeoutMs', '10'],
    ['commandTimeoutMs', 9],
    ['commandTimeoutMs', 0],
    ['commandTimeoutMs', Number.POSITIVE_INFINITY],
    ['commandTimeoutMs', '2000'],
    ['holdWarningMs', -1],
    ['holdWarningMs', 1.5],
    ['holdWarningMs', Number.POSITIVE_INFINITY],
    ['holdWarningMs', '60000'],
    ['waitWarningMs', -1],
    ['waitWarningMs', Number.NaN],
    ['waitWarningMs', Number.POSITIVE_INFINITY],
    ['keyPrefix', 'app{x}:'],
    ['keyPrefix', 'a{'],
    ['keyPrefix', 'a}'],
    ['keyPrefix', 42],
    ['keyPrefix', null],
    ['autoExtend', 'true'],
    ['autoExtend', 1],
    ['autoExtend', null],
    ['appName', 42],
    ['appName', null],
    ['livenessCheckMs', 49],
    ['livenessCheckMs', -1],
    ['livenessCheckMs', 400.5],
    ['livenessCheckMs', Number.POSITIVE_INFINITY],
    ['livenessCheckMs', '400'],
    ['livenessCheckMs', null],
  ])('rejects %s = %p, naming the option', (option, value) => {
    const err = thrown(() => resolveEngineSettings({ [option]: value }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as LockConfigError).option).toBe(option);
    expect((err as LockConfigError).message).toMatch(new RegExp(`^invalid ${option}:`));
    expect((err as LockConfigError).key).toBeUndefined();
  });

  it('takes waitForReplicas with its timeout default, frozen', () => {
    const one = resolveEngineSettings({ waitForReplicas: { replicas: 1 } }).waitForReplicas;
    expect(one).toEqual({ replicas: 1, timeoutMs: 1_000 });
    expect(Object.isFrozen(one)).toBe(true);
    expect(
      resolveEngineSettings({ waitForReplicas: { replicas: 'connected', timeoutMs: 300 } }).waitForReplicas,
    ).toEqual({
      replicas: 'connected',
      timeoutMs: 300,
    });
    // The default timeout stays under a small commandTimeoutMs, which bounds the whole round trip.
    expect(resolveEngineSettings({ commandTimeoutMs: 500, waitForReplicas: { replicas: 2 } }).waitForReplicas).toEqual({
      replicas: 2,
      timeoutMs: 499,
    });
  });

  it.each<[unknown, string]>([
    [null, 'waitForReplicas'],
    [1, 'waitForReplicas'],
    [[1], 'waitForReplicas'],
    [{}, 'waitForReplicas.replicas'],
    [{ replicas: 0 }, 'waitForReplicas.replicas'],
    [{ replicas: 1.5 }, 'waitForReplicas.replicas'],
    [{ replicas: 'all' }, 'waitForReplicas.replicas'],
    [{ replicas: '1' }, 'waitForReplicas.replicas'],
    [{ replicas: 1, timeoutMs: 0 }, 'waitForReplicas.timeoutMs'],
    [{ replicas: 1, timeoutMs: 2.5 }, 'waitForReplicas.timeoutMs'],
    [{ replicas: 1, timeoutMs: 2_000 }, 'waitForReplicas.timeoutMs'],
  ])('rejects waitForReplicas = %p, naming %s', (value, option) => {
    const err = thrown(() => resolveEngineSettings({ waitForReplicas: value as never }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as LockConfigError).option).toBe(option);
    expect((err as LockConfigError).message).toMatch(new RegExp(`^invalid ${option.replace('.', '\\.')}:`));
  });

  it('says a replica wait must fit in the command timeout', () => {
    expect(() =>
      resolveEngineSettings({ commandTimeoutMs: 1_000, waitForReplicas: { replicas: 1, timeoutMs: 1_000 } }),
    ).toThrow('invalid waitForReplicas.timeoutMs: 1000; it must be less than commandTimeoutMs (1000)');
  });

  it('says the allowed range of a duration', () => {
    expect(() => resolveEngineSettings({ leaseMs: 29 })).toThrow(
      'invalid leaseMs: 29; expected an integer number of milliseconds from 30 to 2147483647',
    );
    expect(() => resolveEngineSettings({ waitTimeoutMs: -1 })).toThrow(
      'invalid waitTimeoutMs: -1; expected an integer number of milliseconds from 0 to 2147483647 (or Infinity)',
    );
  });
});

describe('resolveAcquireOptions', () => {
  const settings = resolveEngineSettings({ leaseMs: 5_000, waitTimeoutMs: 700, autoExtend: false });
  const KEY = 'article:1';

  it.each<[string, AcquireOptions | undefined]>([
    ['undefined', undefined],
    ['an empty object', {}],
  ])('takes the engine settings for %s', (_name, options) => {
    expect(resolveAcquireOptions(settings, options, KEY)).toEqual({
      mode: 'write',
      leaseMs: 5_000,
      autoExtend: false,
      waitTimeoutMs: 700,
      signal: undefined,
      fair: false,
      ifLocked: 'wait',
      holdAtLeastMs: 0,
    });
  });

  it('takes every per-call option over the settings', () => {
    const signal = new AbortController().signal;
    const resolved = resolveAcquireOptions(
      settings,
      {
        mode: 'read',
        leaseMs: 30,
        waitTimeoutMs: 0,
        autoExtend: true,
        signal,
        fair: true,
        ifLocked: 'skip',
        holdAtLeastMs: 20,
      },
      KEY,
    );
    expect(resolved).toEqual({
      mode: 'read',
      leaseMs: 30,
      autoExtend: true,
      waitTimeoutMs: 0,
      signal,
      fair: true,
      ifLocked: 'skip',
      holdAtLeastMs: 20,
    });
    // The first lease covers the whole minimum hold.
    expect(resolveAcquireOptions(settings, { leaseMs: 30, holdAtLeastMs: 5_000 }, KEY).leaseMs).toBe(5_000);
    expect(resolved.signal).toBe(signal);
  });

  it.each<[string, AcquireOptions, Partial<Record<string, unknown>>]>([
    ['mode write', { mode: 'write' }, { mode: 'write' }],
    ['a wait of Infinity', { waitTimeoutMs: Number.POSITIVE_INFINITY }, { waitTimeoutMs: Number.POSITIVE_INFINITY }],
    ['the longest lease', { leaseMs: MAX_DURATION_MS }, { leaseMs: MAX_DURATION_MS }],
    ['fair false', { fair: false }, { fair: false }],
  ])('accepts %s', (_name, options, expected) => {
    expect(resolveAcquireOptions(settings, options, KEY)).toMatchObject(expected);
  });

  it.each<[string, unknown]>([
    ['a string', 'read'],
    ['a number', 42],
    ['null', null],
    ['a boolean', true],
  ])('rejects options that are %s, naming the key', (_name, options) => {
    const err = thrown(() => resolveAcquireOptions(settings, options as AcquireOptions, KEY));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as LockConfigError).option).toBe('options');
    expect((err as LockConfigError).key).toBe(KEY);
    expect((err as LockConfigError).message).toContain(`"${KEY}"`);
  });

  it.each<[string, unknown]>([
    ['mode', null],
    ['mode', 'exclusive'],
    ['mode', 'WRITE'],
    ['mode', ''],
    ['leaseMs', 29],
    ['leaseMs', 100.5],
    ['leaseMs', Number.NaN],
    ['leaseMs', Number.POSITIVE_INFINITY],
    ['leaseMs', MAX_DURATION_MS + 1],
    ['leaseMs', '100'],
    ['waitTimeoutMs', -1],
    ['waitTimeoutMs', 1.5],
    ['waitTimeoutMs', Number.NaN],
    ['waitTimeoutMs', '0'],
    ['autoExtend', 'yes'],
    ['autoExtend', 0],
    ['signal', {}],
    ['signal', { aborted: false, addEventListener: () => undefined }],
    ['signal', new AbortController()],
    ['fair', 'yes'],
    ['fair', 1],
  ])('rejects %s = %p, naming the option and the key', (option, value) => {
    const err = thrown(() => resolveAcquireOptions(settings, { [option]: value } as AcquireOptions, KEY));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as LockConfigError).option).toBe(option);
    expect((err as LockConfigError).key).toBe(KEY);
    expect((err as LockConfigError).message).toMatch(new RegExp(`^invalid ${option}`));
    expect((err as LockConfigError).message).toContain(`"${KEY}"`);
  });
});
