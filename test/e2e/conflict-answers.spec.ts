// What a client is told when a decorated route cannot get what it needs: each kind of conflict (a lock not acquired
// in time, a semaphore with no free permit, a request skipped with `ifLocked: 'skip'`) names what it is, its key,
// the limit where there is one, and carries `Retry-After`. Through a real Nest application and Redis.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Param, Post } from '@nestjs/common';
import request from 'supertest';
import { Semaphore } from '../../lib/decorators/semaphore.decorator.js';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { ReadLocked } from '../../lib/decorators/read-locked.decorator.js';
import { LockTestKit } from '../support/lock-test-kit.js';

@Controller('conflicts')
class ConflictsController {
  @Post('lock/:id')
  @WriteLocked('invoice:<id>', { waitTimeoutMs: 100 })
  write(@Param('id') id: string) {
    return { id };
  }

  @Post('read/:id')
  @ReadLocked('invoice:<id>', { waitTimeoutMs: 100 })
  read(@Param('id') id: string) {
    return { id };
  }

  @Post('once/:id')
  @WriteLocked('report:<id>', { ifLocked: 'skip' })
  once(@Param('id') id: string) {
    return { id };
  }

  @Post('export')
  @Semaphore('export', { limit: 1, waitTimeoutMs: 100 })
  exportAll() {
    return { exported: true };
  }
}

describe('conflict answers of decorated routes', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('a semaphore with no free permit: 409 naming the semaphore, its key and limit, with Retry-After', async () => {
    const t = await kit.app({ controllers: [ConflictsController] });
    const permit = await t.locks.acquirePermit('export', { limit: 1 });
    const res = await request(t.http).post('/conflicts/export');
    await permit.release();
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      kind: 'semaphore',
      message: 'semaphore "export" has no free permit (limit 1): none was freed within 100 ms; retry later',
      key: 'export',
      keys: ['export'],
      limit: 1,
      skipped: false,
      waitedMs: expect.any(Number),
    });
    expect(res.body.message).not.toMatch(/\block/);
    expect((await request(t.http).post('/conflicts/export')).status).toBe(201);
  });

  it('a lock not acquired in time: 409 naming the lock, its mode and key, with Retry-After', async () => {
    const t = await kit.app({ controllers: [ConflictsController] });
    const held = await t.locks.acquire('invoice:7');
    const write = await request(t.http).post('/conflicts/lock/7');
    const read = await request(t.http).post('/conflicts/read/7');
    await held.release();
    expect(write.status).toBe(409);
    expect(write.headers['retry-after']).toBe('1');
    expect(write.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      kind: 'lock',
      message: 'the write lock on "invoice:7" is held by someone else: not acquired within 100 ms; retry later',
      key: 'invoice:7',
      keys: ['invoice:7'],
      mode: 'write',
      skipped: false,
      waitedMs: expect.any(Number),
    });
    expect(read.body).toMatchObject({
      kind: 'lock',
      mode: 'read',
      message: 'the read lock on "invoice:7" is held by someone else: not acquired within 100 ms; retry later',
    });
  });

  it("a request skipped with ifLocked: 'skip': 409 saying it was not run and why, with Retry-After", async () => {
    const t = await kit.app({ controllers: [ConflictsController] });
    const held = await t.locks.acquire('report:3');
    const res = await request(t.http).post('/conflicts/once/3');
    await held.release();
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      kind: 'lock',
      message:
        'the write lock on "report:3" is held by someone else, and this route does not wait for it (ifLocked: \'skip\'): not run; retry later',
      key: 'report:3',
      keys: ['report:3'],
      mode: 'write',
      skipped: true,
      waitedMs: 0,
    });
  });

  it('conflictStatus applies to every kind, Retry-After with it', async () => {
    const t = await kit.app({ controllers: [ConflictsController] }, { conflictStatus: 423 });
    const permit = await t.locks.acquirePermit('export', { limit: 1 });
    const res = await request(t.http).post('/conflicts/export');
    await permit.release();
    expect([res.status, res.headers['retry-after'], res.body.kind, res.body.statusCode]).toEqual([
      423,
      '1',
      'semaphore',
      423,
    ]);
  });
});
