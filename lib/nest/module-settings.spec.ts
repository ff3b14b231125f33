import { HttpException } from '@nestjs/common';
import { describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockConfigError } from '../errors/lock-config.error.js';
import { DefaultLockHttpErrorMapper } from './http-error-mapper.js';
import type { LockHttpErrorMapper } from './http-error-mapper.js';
import { DEFAULT_MODULE_SETTINGS, resolveModuleSettings } from './module-settings.js';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';

/** Module options with a placeholder connection (resolveModuleSettings never looks at `redis`). */
function options(extra: Record<string, unknown> = {}): RedisLockModuleOptions {
  return { redis: 'redis://127.0.0.1:1', ...extra } as RedisLockModuleOptions;
}

/** The error `fn` throws (fails the test when it throws nothing). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw, got none');
}

const timeout = new LockAcquireTimeoutError({ key: 'a', keys: ['a'], mode: 'write', waitedMs: 10, waitTimeoutMs: 10 });

describe('resolveModuleSettings', () => {
  it('applies the defaults', () => {
    const settings = resolveModuleSettings(options());
    expect(settings.onLockLost).toBe('warn');
    expect(settings.conflictStatus).toBe(409);
    expect(settings.metrics).toEqual({});
    expect(settings.metricsRequested).toBe(false);
    expect(settings.httpErrorMapper).toBeInstanceOf(DefaultLockHttpErrorMapper);
    expect(Object.keys(settings).sort()).toEqual([
      'conflictStatus',
      'httpErrorMapper',
      'metrics',
      'metricsRequested',
      'onLockLost',
    ]);
    expect(Object.isFrozen(settings)).toBe(true);
  });

  it('keeps the documented defaults in one frozen object', () => {
    expect(DEFAULT_MODULE_SETTINGS).toEqual({ onLockLost: 'warn', conflictStatus: 409, metrics: true });
    expect(Object.isFrozen(DEFAULT_MODULE_SETTINGS)).toBe(true);
  });

  it('gives the default mapper the configured conflict status', () => {
    const settings = resolveModuleSettings(options({ conflictStatus: 423 }));
    const mapped = settings.httpErrorMapper.map(timeout, {} as never);
    expect(mapped).toBeInstanceOf(HttpException);
    expect((mapped as HttpException).getStatus()).toBe(423);
  });

  it.each(['warn', 'throw', 'ignore'] as const)('accepts onLockLost %p', (onLockLost) => {
    expect(resolveModuleSettings(options({ onLockLost })).onLockLost).toBe(onLockLost);
  });

  it.each([400, 409, 423, 503, 599])('accepts conflictStatus %p', (conflictStatus) => {
    expect(resolveModuleSettings(options({ conflictStatus })).conflictStatus).toBe(conflictStatus);
  });

  it.each<[string, unknown, unknown]>([
    ['true becomes {}', true, {}],
    ['false is kept', false, false],
    ['undefined becomes {}', undefined, {}],
    ['an object is kept', { keyAttribute: true }, { keyAttribute: true }],
  ])('metrics: %s', (_name, metrics, expected) => {
    expect(resolveModuleSettings(options({ metrics })).metrics).toEqual(expected);
  });

  it('keeps the metrics object given (same reference)', () => {
    const metrics = { keyAttribute: true };
    expect(resolveModuleSettings(options({ metrics })).metrics).toBe(metrics);
  });

  it('keeps a custom httpErrorMapper (same reference)', () => {
    const mapper: LockHttpErrorMapper = { map: (e) => e };
    expect(resolveModuleSettings(options({ httpErrorMapper: mapper })).httpErrorMapper).toBe(mapper);
  });

  it.each<[string, unknown]>([
    ['onLockLost', 'error'],
    ['onLockLost', 'WARN'],
    ['onLockLost', 1],
    ['onLockLost', ''],
    ['conflictStatus', 399],
    ['conflictStatus', 600],
    ['conflictStatus', 409.5],
    ['conflictStatus', '409'],
    ['conflictStatus', Number.NaN],
    ['conflictStatus', 200],
    ['httpErrorMapper', {}],
    ['httpErrorMapper', { map: 'not a function' }],
    ['httpErrorMapper', 42],
    ['metrics', 'yes'],
    ['metrics', 1],
    ['metrics', () => ({})],
  ])('rejects %s = %p, naming the option', (option, value) => {
    const err = thrown(() => resolveModuleSettings(options({ [option]: value })));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as LockConfigError).option).toBe(option);
    expect((err as LockConfigError).message).toMatch(new RegExp(`^invalid ${option}:`));
  });
});
