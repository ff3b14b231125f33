import { BadRequestException, HttpException, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockClosedError } from '../errors/lock-closed.error.js';
import { LockConfigError } from '../errors/lock-config.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { LockNotHeldError } from '../errors/lock-not-held.error.js';
import { LockUnavailableError } from '../errors/lock-unavailable.error.js';
import { LockUpgradeError } from '../errors/lock-upgrade.error.js';
import { LockError } from '../errors/lock.error.js';
import { DefaultLockHttpErrorMapper } from './http-error-mapper.js';
import { LockConflictException } from './lock-conflict.exception.js';

const CONTEXT = {} as never;

/** An HTTP execution context whose response records the headers set on it, Express or Fastify style. */
function httpContext(style: 'express' | 'fastify') {
  const headers: Record<string, string> = {};
  const set = (name: string, value: string) => (headers[name] = value);
  const response = style === 'express' ? { setHeader: set } : { header: set };
  const context = { switchToHttp: () => ({ getResponse: () => response }) } as never;
  return { context, headers };
}

function timeoutError(): LockAcquireTimeoutError {
  return new LockAcquireTimeoutError({
    key: 'account:1',
    keys: ['account:1', 'account:2'],
    mode: 'write',
    waitedMs: 1234.6,
    waitTimeoutMs: 1000,
  });
}

describe('DefaultLockHttpErrorMapper', () => {
  it.each<[string, DefaultLockHttpErrorMapper, number]>([
    ['the default status', new DefaultLockHttpErrorMapper(), 409],
    ['a configured status', new DefaultLockHttpErrorMapper(423), 423],
  ])('maps a lock timeout to LockConflictException with %s', (_name, mapper, status) => {
    const error = timeoutError();
    const { context, headers } = httpContext('express');
    const mapped = mapper.map(error, context);
    expect(mapped).toBeInstanceOf(LockConflictException);
    const exception = mapped as LockConflictException;
    expect(exception.getStatus()).toBe(status);
    expect(exception.getResponse()).toEqual({
      statusCode: status,
      error: 'Conflict',
      kind: 'lock',
      message: 'the write lock on "account:1" is held by someone else: not acquired within 1000 ms; retry later',
      key: 'account:1',
      keys: ['account:1', 'account:2'],
      mode: 'write',
      skipped: false,
      waitedMs: 1235,
    });
    expect(exception.cause).toBe(error);
    expect(headers).toEqual({ 'Retry-After': '1' });
  });

  it('maps an invalid key to 400 Bad Request with the error message', () => {
    const error = new LockKeyError('cannot build lock key "a:<id>" on C.m: <id> is null', null);
    const mapped = new DefaultLockHttpErrorMapper().map(error, CONTEXT);
    expect(mapped).toBeInstanceOf(BadRequestException);
    const exception = mapped as BadRequestException;
    expect(exception.getStatus()).toBe(400);
    expect(exception.getResponse()).toEqual({ statusCode: 400, error: 'Bad Request', message: error.message });
    expect(exception.cause).toBe(error);
  });

  it('maps a closed lock service to 503 Service Unavailable', () => {
    const error = new LockClosedError('a');
    const { context, headers } = httpContext('fastify');
    const mapped = new DefaultLockHttpErrorMapper(423).map(error, context);
    expect(mapped).toBeInstanceOf(ServiceUnavailableException);
    const exception = mapped as ServiceUnavailableException;
    expect(exception.getStatus()).toBe(503);
    expect(exception.getResponse()).toEqual({ statusCode: 503, error: 'Service Unavailable', message: error.message });
    expect(exception.cause).toBe(error);
    expect(headers).toEqual({ 'Retry-After': '1' });
  });

  describe('Redis unavailable', () => {
    it.each(['express', 'fastify'] as const)('maps LockUnavailableError to 503 with Retry-After (%s)', (style) => {
      const cause = new Error('Connection is closed.');
      const error = new LockUnavailableError({
        key: 'a',
        operation: 'acquire',
        reason: 'unreachable',
        detail: 'down',
        cause,
      });
      const { context, headers } = httpContext(style);
      const mapped = new DefaultLockHttpErrorMapper().map(error, context);
      expect(mapped).toBeInstanceOf(ServiceUnavailableException);
      const exception = mapped as ServiceUnavailableException;
      expect(exception.getStatus()).toBe(503);
      expect(exception.getResponse()).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'the lock on "a" is unavailable: Redis cannot be reached; retry later',
        key: 'a',
        reason: 'unreachable',
      });
      expect(JSON.stringify(exception.getResponse())).not.toContain('Connection is closed');
      expect(exception.cause).toBe(error);
      expect(headers).toEqual({ 'Retry-After': '1' });
    });

    it('sends the configured Retry-After', () => {
      const error = new LockUnavailableError({ key: 'a', operation: 'acquire', reason: 'timeout', detail: 'slow' });
      const { context, headers } = httpContext('express');
      new DefaultLockHttpErrorMapper(409, 5).map(error, context);
      expect(headers).toEqual({ 'Retry-After': '5' });
    });
  });

  it.each<[string, unknown]>([
    ['a plain Error', new Error('boom')],
    ['an HttpException', new NotFoundException('no such article')],
    ['the LockError base class', new LockError('x', { key: 'a' })],
    ['a LockConfigError', new LockConfigError('bad', 'leaseMs')],
    ['a LockLostError', new LockLostError('a', 'not-in-redis')],
    ['a LockNotHeldError', new LockNotHeldError('a', 'released')],
    ['a LockUpgradeError', new LockUpgradeError('a')],
    ['a string', 'failure'],
    ['undefined', undefined],
    ['a plain object', { status: 409 }],
  ])('returns %s as is', (_name, error) => {
    expect(new DefaultLockHttpErrorMapper().map(error, CONTEXT)).toBe(error);
  });

  describe('a subclass overriding conflict', () => {
    class LockedIs423 extends DefaultLockHttpErrorMapper {
      protected override conflict(error: LockAcquireTimeoutError): unknown {
        return new HttpException({ message: `retry "${error.key}" later` }, 423);
      }
    }
    const mapper = new LockedIs423();

    it('changes the timeout answer', () => {
      const mapped = mapper.map(timeoutError(), CONTEXT);
      expect(mapped).not.toBeInstanceOf(LockConflictException);
      expect(mapped).toBeInstanceOf(HttpException);
      expect((mapped as HttpException).getStatus()).toBe(423);
      expect((mapped as HttpException).getResponse()).toEqual({ message: 'retry "account:1" later' });
    });

    it('keeps the other cases', () => {
      expect(mapper.map(new LockKeyError('bad key', ''), CONTEXT)).toBeInstanceOf(BadRequestException);
      expect(mapper.map(new LockClosedError(), CONTEXT)).toBeInstanceOf(ServiceUnavailableException);
      const other = new Error('x');
      expect(mapper.map(other, CONTEXT)).toBe(other);
    });
  });
});
