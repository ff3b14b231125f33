import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Body, Controller, Get, HttpException, NotFoundException, Param, Post, Query, Sse } from '@nestjs/common';
import type { MessageEvent } from '@nestjs/common';
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Observable, from, interval, map, mergeMap, throwError, timer } from 'rxjs';
import request from 'supertest';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { lockKeysLeft, waitUntilFree } from '../support/nest-app.js';
import type { LockTestApp } from '../support/nest-app.js';
import { LockTestKit, commandStats, scriptCalls, sleep, until } from '../support/lock-test-kit.js';

const calls = { handler: 0 };

@Controller('docs')
class DocsController {
  constructor(private readonly locks: LockService) {}

  @Post()
  @WriteLocked('doc:<dto.id>')
  create(@Body() dto: { id?: unknown }) {
    calls.handler++;
    return dto;
  }

  @Get('search')
  @WriteLocked('search:<q>')
  search(@Query('q') q: string) {
    calls.handler++;
    return { q };
  }

  @Get(':id/missing')
  @WriteLocked('doc:<id>')
  missing(@Param('id') id: string) {
    throw new NotFoundException(`no document ${id}`);
  }

  @Get(':id/teapot')
  @WriteLocked('doc:<id>')
  async teapot(@Param('id') id: string) {
    await sleep(10);
    throw new HttpException({ teapot: id, reason: 'short and stout' }, 418);
  }

  /** Emits once after 300 ms: the lock must be held until then. */
  @Get(':id/later')
  @WriteLocked('doc:<id>')
  later(@Param('id') id: string): Observable<{ id: string; done: boolean }> {
    return timer(300).pipe(map(() => ({ id, done: true })));
  }

  /** Fails after 300 ms with the handler's own exception. */
  @Get(':id/later-fails')
  @WriteLocked('doc:<id>')
  laterFails(@Param('id') id: string) {
    return timer(300).pipe(mergeMap(() => throwError(() => new HttpException(`document ${id} went away`, 410))));
  }

  /** The Observable's own work takes the same lock again: it runs as the handler's owner, so it re-enters. */
  @Get(':id/nested')
  @WriteLocked('doc:<id>', { waitTimeoutMs: 300 })
  nested(@Param('id') id: string) {
    return timer(20).pipe(
      mergeMap(() =>
        from(this.locks.withLock(`doc:${id}`, (lock) => ({ id, reentrant: lock.reentrant }), { waitTimeoutMs: 300 })),
      ),
    );
  }

  /** An endless server-sent event stream: the lock lasts until the client goes away. */
  @Sse(':id/events')
  @WriteLocked('doc:<id>')
  events(@Param('id') id: string): Observable<MessageEvent> {
    return interval(20).pipe(map((i) => ({ data: { id, i } })));
  }
}

describe('decorated handlers: bad keys, handler errors, Observable responses', () => {
  const kit = new LockTestKit();
  let t: LockTestApp;

  beforeEach(async () => {
    calls.handler = 0;
    t = await kit.app({ controllers: [DocsController] });
  });
  afterEach(async () => {
    await kit.closeAll();
  });

  it.each([
    ['a body without the templated property', { id: undefined }],
    ['a null property', { id: null }],
    ['an object where a scalar is needed', { id: { nested: 1 } }],
    ['an empty string', { id: '' }],
  ])('answers 400 for %s, without running the handler or touching Redis', async (_what, body) => {
    // On a private server, so every lock script call counted below is this app's.
    const own = await kit.isolatedApp({ controllers: [DocsController] });
    await own.admin.config('RESETSTAT');
    const r = await request(own.http).post('/docs').send(body);
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('doc:<dto.id>');
    expect(calls.handler).toBe(0);
    expect(scriptCalls(await commandStats(own.admin))).toBe(0);
    // A valid body does reach Redis: the count above would have seen it.
    expect((await request(own.http).post('/docs').send({ id: 'ok' })).status).toBe(201);
    expect(scriptCalls(await commandStats(own.admin))).toBeGreaterThan(0);
  });

  it('answers 400 for an empty query parameter without touching Redis, and serves a valid one', async () => {
    const own = await kit.isolatedApp({ controllers: [DocsController] });
    await own.admin.config('RESETSTAT');
    const bad = await request(own.http).get('/docs/search?q=');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('empty');
    expect(calls.handler).toBe(0);
    expect(scriptCalls(await commandStats(own.admin))).toBe(0);

    const good = await request(own.http).get('/docs/search?q=cats');
    expect(good.status).toBe(200);
    expect(good.body).toEqual({ q: 'cats' });
    expect(calls.handler).toBe(1);
    expect(scriptCalls(await commandStats(own.admin))).toBeGreaterThan(0);
  });

  it('passes the handler’s own HttpExceptions through untouched and releases the lock', async () => {
    const redis = kit.redis();
    const notFound = await request(t.http).get('/docs/1/missing');
    expect(notFound.status).toBe(404);
    expect(notFound.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'no document 1' });
    await waitUntilFree(t.locks, 'doc:1');

    const teapot = await request(t.http).get('/docs/2/teapot');
    expect(teapot.status).toBe(418);
    expect(teapot.body).toEqual({ teapot: '2', reason: 'short and stout' });
    await waitUntilFree(t.locks, 'doc:2');
    expect(await lockKeysLeft(redis, t)).toEqual([]);

    // Free for real: a lock-free attempt succeeds at once.
    const h = await t.locks.tryAcquire(['doc:1', 'doc:2']);
    expect(h).not.toBeNull();
    await h!.release();
  });

  it('holds the lock while an Observable response is pending and releases it when it completes', async () => {
    const started = performance.now();
    const pending = request(t.http)
      .get('/docs/9/later')
      .then((r) => r);
    await until(async () => (await t.locks.inspect('doc:9')) !== null, 250, 'the lock of the pending response');
    const during = await t.locks.inspect('doc:9');
    expect(during?.mode).toBe('write');
    expect(during?.holders).toHaveLength(1);
    expect(await t.locks.tryAcquire('doc:9')).toBeNull();

    const r = await pending;
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: '9', done: true });
    await waitUntilFree(t.locks, 'doc:9');
  });

  it('holds the lock while an Observable response is pending and releases it when it errors', async () => {
    const pending = request(t.http)
      .get('/docs/10/later-fails')
      .then((r) => r);
    await until(
      async () => (await t.locks.inspect('doc:10'))?.mode === 'write',
      250,
      'the lock of the pending response',
    );

    const r = await pending;
    expect(r.status).toBe(410);
    expect(r.body.message).toBe('document 10 went away');
    await waitUntilFree(t.locks, 'doc:10');
  });

  it('lets the work of an Observable response re-enter the handler’s lock (same owner)', async () => {
    const r = await request(t.http).get('/docs/12/nested');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: '12', reentrant: true });
    await waitUntilFree(t.locks, 'doc:12');
  });

  it('holds the lock for a server-sent event stream until the client disconnects', async () => {
    const { port } = t.http.address() as AddressInfo;
    const req = get({ host: '127.0.0.1', port, path: '/docs/11/events' });
    try {
      const received = await new Promise<string>((resolve, reject) => {
        req.on('error', reject);
        req.on('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            text += chunk.toString();
            if ((text.match(/^data:/gm) ?? []).length >= 3) resolve(text);
          });
        });
      });
      expect(received).toContain('"id":"11"');
      expect((await t.locks.inspect('doc:11'))?.mode).toBe('write');
    } finally {
      req.destroy();
    }
    await waitUntilFree(t.locks, 'doc:11', 1_000);
  });
});
