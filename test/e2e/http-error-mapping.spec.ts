import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, HttpException, Injectable, Param } from '@nestjs/common';
import type { ExecutionContext } from '@nestjs/common';
import request from 'supertest';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import { LockError } from '../../lib/errors/lock.error.js';
import { DefaultLockHttpErrorMapper } from '../../lib/nest/http-error-mapper.js';
import type { LockHttpErrorMapper } from '../../lib/nest/http-error-mapper.js';
import { waitUntilFree } from '../support/nest-app.js';
import { LockTestKit } from '../support/lock-test-kit.js';

@Controller('items')
class ItemsController {
  @Get(':id')
  @WriteLocked('item:<id>', { waitTimeoutMs: 50 })
  get(@Param('id') id: string) {
    return { id };
  }

  @Get(':id/once')
  @WriteLocked('item:<id>', { ifLocked: 'skip', waitTimeoutMs: 5_000 })
  once(@Param('id') id: string) {
    return { id };
  }

  @Get(':id/broken')
  @WriteLocked('item:<id>')
  broken(@Param('id') id: string) {
    throw new HttpException(`item ${id} is broken`, 500);
  }
}

/** Overrides one case of the default mapping: a lock timeout becomes 423 Locked with a body of its own. */
class LockedIs423 extends DefaultLockHttpErrorMapper {
  protected override conflict(error: LockAcquireTimeoutError): unknown {
    return new HttpException({ locked: error.key, retryInMs: 100 }, 423);
  }
}

/** A mapping written from scratch: every lock error becomes 503, and the mapper sees the execution context. */
@Injectable()
class EverythingUnavailable implements LockHttpErrorMapper {
  readonly seen: string[] = [];
  map(error: unknown, context: ExecutionContext): unknown {
    this.seen.push(`${context.getClass().name}.${context.getHandler().name}`);
    return error instanceof LockError ? new HttpException({ unavailable: error.key ?? null }, 503) : error;
  }
}

describe('HTTP mapping of lock errors (module option httpErrorMapper)', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it("ifLocked 'skip' on a controller: a busy lock answers the conflict status at once (a skipped request is not a success)", async () => {
    const t = await kit.app({ controllers: [ItemsController] });
    const skipped: string[] = [];
    t.locks.on('skipped', (e) => skipped.push(`${e.key} ${e.reason}`));
    const held = await t.locks.acquire('item:1');
    const started = Date.now();
    const busy = await request(t.http).get('/items/1/once');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ key: 'item:1' });
    expect(skipped).toEqual(['item:1 busy']);
    await held.release();
    expect((await request(t.http).get('/items/1/once')).body).toEqual({ id: '1' });
  });

  it('a subclass of the default mapper changes the case it overrides and keeps the others', async () => {
    const t = await kit.app({ controllers: [ItemsController] }, { httpErrorMapper: new LockedIs423() });
    const held = await t.locks.acquire('item:1');
    const locked = await request(t.http).get('/items/1');
    expect(locked.status).toBe(423);
    expect(locked.body).toEqual({ locked: 'item:1', retryInMs: 100 });
    await held.release();

    // Not overridden: the default 400 for a bad key and pass-through of the handler's own errors.
    const bad = await request(t.http).get(`/items/${'x'.repeat(1_100)}`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('1105 bytes');
    const broken = await request(t.http).get('/items/2/broken');
    expect(broken.status).toBe(500);
    expect(broken.body).toEqual({ statusCode: 500, message: 'item 2 is broken' });
    await waitUntilFree(t.locks, 'item:2');
  });

  it('a mapper written from scratch takes over every case and gets the execution context', async () => {
    const mapper = new EverythingUnavailable();
    const t = await kit.app({ controllers: [ItemsController] }, { httpErrorMapper: mapper });
    const held = await t.locks.acquire('item:3');
    const busy = await request(t.http).get('/items/3');
    expect(busy.status).toBe(503);
    expect(busy.body).toEqual({ unavailable: 'item:3' });
    await held.release();
    const bad = await request(t.http).get(`/items/${'x'.repeat(1_100)}`);
    expect(bad.status).toBe(503);
    expect(mapper.seen).toEqual(['ItemsController.get', 'ItemsController.get']);
  });

  it('without the option, the default mapping answers 409 for a lock timeout', async () => {
    const t = await kit.app({ controllers: [ItemsController] });
    const held = await t.locks.acquire('item:4');
    const conflict = await request(t.http).get('/items/4');
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ statusCode: 409, error: 'Conflict', key: 'item:4' });
    await held.release();
  });

  it('an httpErrorMapper without a map method is refused at start-up, naming the option', async () => {
    await expect(kit.app({ controllers: [ItemsController] }, { httpErrorMapper: {} as never })).rejects.toMatchObject({
      name: 'LockConfigError',
      option: 'httpErrorMapper',
    });
  });
});
