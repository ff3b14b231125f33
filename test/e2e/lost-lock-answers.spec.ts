// A controller handler whose lock is lost while it runs (here: force-released by an operator, noticed by the
// watchdog before the handler returns): what the client is answered under each `onLockLost`.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Param, Post } from '@nestjs/common';
import request from 'supertest';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import type { LockService } from '../../lib/nest/lock.service.js';
import type { OnLockLost } from '../../lib/nest/redis-lock-module-options.interface.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { until } from '../support/async.js';

let locks: LockService;
const done: string[] = [];

@Controller('invoices')
class InvoicesController {
  @Post(':id')
  @WriteLocked('invoice:<id>', { leaseMs: 900 })
  async issue(@Param('id') id: string): Promise<{ id: string }> {
    // Someone frees the lock mid-request (the lock board, the CLI); the watchdog notices at its next renewal.
    await locks.forceRelease(`invoice:${id}`);
    await until(() => locks.current()?.signal.aborted === true, 5_000, 'the loss to be noticed');
    done.push(id);
    return { id };
  }
}

describe('a controller whose lock was lost while it ran', () => {
  const kit = new LockTestKit();
  afterEach(async () => {
    await kit.closeAll();
    done.length = 0;
  });

  async function answer(onLockLost: OnLockLost | undefined) {
    const t = await kit.app({ controllers: [InvoicesController] }, onLockLost ? { onLockLost } : {});
    locks = t.locks;
    return request(t.http).post('/invoices/7');
  }

  it("with onLockLost: 'throw', the client gets an error instead of a success (the handler's work did run)", async () => {
    const res = await answer('throw');
    expect(done).toEqual(['7']);
    expect(res.status).toBe(500);
  });

  it("with the default ('warn') and with 'ignore', the handler's answer stands", async () => {
    expect((await answer(undefined)).status).toBe(201);
    expect((await answer('ignore')).status).toBe(201);
    expect(done).toEqual(['7', '7']);
  });
});
