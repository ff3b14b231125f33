import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Param, Put } from '@nestjs/common';
import request from 'supertest';
import { LockUpgradeError } from '../../lib/errors/lock-upgrade.error.js';
import { ReadLocked } from '../../lib/decorators/read-locked.decorator.js';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockService } from '../../lib/nest/lock.service.js';
import type { LockInfo } from '../../lib/types/lock.types.js';
import { Timeline, waitUntilFree } from '../support/nest-app.js';
import type { LockTestApp } from '../support/nest-app.js';
import { LockTestKit } from '../support/lock-test-kit.js';

const SLOW_MS = 150;
const timeline = new Timeline();
const seen: { upgradeError?: unknown } = {};

@Injectable()
class ArticleStore {
  constructor(private readonly locks: LockService) {}

  /** Nested inside a locked handler: must re-enter, never wait (a wait would time out after 200 ms). */
  @WriteLocked('article:<id>', { waitTimeoutMs: 200 })
  async save(id: string): Promise<LockInfo | null> {
    return this.locks.inspect(`article:${id}`);
  }

  @ReadLocked('article:<id>', { waitTimeoutMs: 200 })
  async peek(id: string): Promise<LockInfo | null> {
    return this.locks.inspect(`article:${id}`);
  }
}

@Controller('articles')
class ArticlesController {
  constructor(
    private readonly store: ArticleStore,
    private readonly locks: LockService,
  ) {}

  @Get(':id')
  @ReadLocked('article:<id>')
  async find(@Param('id') id: string) {
    return timeline.run(`get ${id}`, SLOW_MS);
  }

  @Put(':id')
  @WriteLocked('article:<id>')
  async update(@Param('id') id: string) {
    return timeline.run(`put ${id}`, SLOW_MS);
  }

  @Put(':id/nested')
  @WriteLocked('article:<id>')
  async nested(@Param('id') id: string) {
    const outer = this.locks.current();
    const inWrite = await this.store.save(id);
    const inRead = await this.store.peek(id);
    const after = await this.locks.inspect(`article:${id}`);
    return { outerKey: outer?.key, inWrite, inRead, after };
  }

  @Get(':id/upgrade')
  @ReadLocked('article:<id>')
  async upgrade(@Param('id') id: string) {
    try {
      return await this.store.save(id);
    } catch (err) {
      seen.upgradeError = err;
      throw err;
    }
  }

  @Get(':id/current')
  @WriteLocked('article:<id>')
  async current(@Param('id') id: string) {
    const handle = this.locks.current();
    const signal = this.locks.currentSignal();
    const info = await this.locks.inspect(`article:${id}`);
    return {
      key: handle?.key,
      mode: handle?.mode,
      isHeld: handle?.isHeld,
      sameSignal: signal !== undefined && signal === handle?.signal,
      aborted: signal?.aborted,
      fencingToken: handle?.fencingToken,
      redisFencingToken: info?.holders[0]?.fencingToken,
    };
  }

  @Get(':id/quick')
  @ReadLocked('article:<id>', { waitTimeoutMs: 100 })
  quick(@Param('id') id: string) {
    return { id };
  }
}

describe('decorated handlers: read/write locking over HTTP', () => {
  const kit = new LockTestKit();
  let t: LockTestApp;

  beforeEach(async () => {
    timeline.clear();
    delete seen.upgradeError;
    t = await kit.app({ controllers: [ArticlesController], providers: [ArticleStore] });
  });
  afterEach(() => kit.closeAll());

  it('lets two slow GETs of one article run at the same time (read locks are shared)', async () => {
    const [a, b] = await Promise.all([request(t.http).get('/articles/1'), request(t.http).get('/articles/1')]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(timeline.spans).toHaveLength(2);
    expect(timeline.overlaps()).toBe(true);
    await waitUntilFree(t.locks, 'article:1');
  });

  it('never lets two slow PUTs of one article overlap, but PUTs of different articles do', async () => {
    const same = await Promise.all([1, 2, 3].map(() => request(t.http).put('/articles/7')));
    expect(same.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(timeline.spans).toHaveLength(3);
    expect(timeline.overlaps()).toBe(false);

    timeline.clear();
    const different = await Promise.all([request(t.http).put('/articles/8'), request(t.http).put('/articles/9')]);
    expect(different.map((r) => r.status)).toEqual([200, 200]);
    expect(timeline.overlaps()).toBe(true);
  });

  it('never lets a PUT overlap GETs of the same article', async () => {
    const responses = await Promise.all([
      request(t.http).get('/articles/3'),
      request(t.http).put('/articles/3'),
      request(t.http).get('/articles/3'),
      request(t.http).put('/articles/3'),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const puts = timeline.spans.filter((s) => s.label.startsWith('put'));
    expect(puts).toHaveLength(2);
    for (const put of puts) {
      for (const other of timeline.spans) {
        if (other === put) continue;
        const overlap = other.enter < put.exit && put.enter < other.exit;
        expect({ put, other, overlap }).toEqual({ put, other, overlap: false });
      }
    }
  });

  it('re-enters: a write-locked handler calls write- and read-locked service methods on the same key without waiting', async () => {
    const started = performance.now();
    const res = await request(t.http).put('/articles/5/nested');
    const took = performance.now() - started;
    expect(res.status).toBe(200);
    expect(took).toBeLessThan(1_000);
    expect(res.body.outerKey).toBe('article:5');
    // Inside save(): one write holder, entered twice.
    expect(res.body.inWrite.mode).toBe('write');
    expect(res.body.inWrite.holders).toHaveLength(1);
    expect(res.body.inWrite.holders[0].holdCount).toBe(2);
    // Inside peek(): the write owner also holds a read (a downgrade), same owner.
    expect(res.body.inRead.mode).toBe('write');
    expect(res.body.inRead.holders).toHaveLength(2);
    expect(new Set(res.body.inRead.holders.map((h: { owner: string }) => h.owner)).size).toBe(1);
    // Back in the handler: the nested holds are gone, the handler's own remains.
    expect(res.body.after.holders).toHaveLength(1);
    expect(res.body.after.holders[0].holdCount).toBe(1);
    await waitUntilFree(t.locks, 'article:5');
  });

  it('rejects a lock upgrade (read-locked handler calling a write-locked method) with LockUpgradeError, answered as 500', async () => {
    const started = performance.now();
    const res = await request(t.http).get('/articles/6/upgrade');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(res.status).toBe(500);
    expect(seen.upgradeError).toBeInstanceOf(LockUpgradeError);
    expect((seen.upgradeError as LockUpgradeError).key).toBe('article:6');
    await waitUntilFree(t.locks, 'article:6');
  });

  it('exposes the current lock inside the handler (current() and currentSignal())', async () => {
    const res = await request(t.http).get('/articles/4/current');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      key: 'article:4',
      mode: 'write',
      isHeld: true,
      sameSignal: true,
      aborted: false,
      fencingToken: res.body.redisFencingToken,
      redisFencingToken: expect.any(Number),
    });
    expect(t.locks.current()).toBeUndefined();
  });

  it('answers 409 with a JSON body naming the key when the lock is not acquired in time, and serves once it is free', async () => {
    const held = await t.locks.acquire('article:2');
    try {
      const started = performance.now();
      const res = await request(t.http).get('/articles/2/quick');
      expect(performance.now() - started).toBeGreaterThanOrEqual(90);
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body).toMatchObject({ statusCode: 409, key: 'article:2', keys: ['article:2'] });
      expect(res.body.message).toContain('article:2');
      expect(res.body.waitedMs).toBeGreaterThanOrEqual(90);
    } finally {
      await held.release();
    }
    const again = await request(t.http).get('/articles/2/quick');
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ id: '2' });
  });
});

describe('decorated handlers: configurable conflict status', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('answers with conflictStatus (423) instead of 409 when the module says so', async () => {
    const t = await kit.app({ controllers: [ArticlesController], providers: [ArticleStore] }, { conflictStatus: 423 });
    const held = await t.locks.acquire('article:2');
    try {
      const res = await request(t.http).get('/articles/2/quick');
      expect(res.status).toBe(423);
      expect(res.body).toMatchObject({ statusCode: 423, key: 'article:2' });
    } finally {
      await held.release();
    }
  });
});
