import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Body, Controller, Injectable, Param, Post } from '@nestjs/common';
import request from 'supertest';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockKeyError } from '../../lib/errors/lock-key.error.js';
import { ReadLocked } from '../../lib/decorators/read-locked.decorator.js';
import { Locked, WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { lockKeysLeft, waitUntilFree } from '../support/nest-app.js';
import type { LockTestApp } from '../support/nest-app.js';
import { LockTestKit } from '../support/lock-test-kit.js';

interface Transfer {
  readonly amount: number;
  readonly meta: { readonly account: { readonly id: string } };
}

@Controller('keys')
class KeysController {
  constructor(private readonly locks: LockService) {}

  private async snapshot() {
    const handle = this.locks.current();
    const infos = await Promise.all((handle?.keys ?? []).map((k) => this.locks.inspect(k)));
    return { keys: handle?.keys, modes: infos.map((i) => i?.mode) };
  }

  @Post(':id/by-index')
  @WriteLocked('first:<0>')
  byIndex(@Param('id') id: string) {
    void id;
    return this.snapshot();
  }

  @Post('by-path')
  @WriteLocked('account:<dto.meta.account.id>')
  byPath(@Body() dto: Transfer) {
    void dto;
    return this.snapshot();
  }

  @Post(':id/by-function')
  @WriteLocked((id: string, dto: { owner: string }) => `fn:${dto.owner}:${id}`)
  byFunction(@Param('id') id: string, @Body() dto: { owner: string }) {
    void [id, dto];
    return this.snapshot();
  }

  @Post(':from/:to/transfer')
  @WriteLocked(['wallet:<from>', 'wallet:<to>'], { waitTimeoutMs: 100 })
  transfer(@Param('from') from: string, @Param('to') to: string) {
    void [from, to];
    return this.snapshot();
  }

  @Post(':a/:b/function-array')
  @ReadLocked((a: string, b: string) => [`pair:${b}`, `pair:${a}`])
  functionArray(@Param('a') a: string, @Param('b') b: string) {
    void [a, b];
    return this.snapshot();
  }
}

@Injectable()
class Ledger {
  constructor(private readonly locks: LockService) {}

  @Locked(() => '')
  async emptyKey(): Promise<string> {
    return 'ran';
  }

  @Locked('entry:<entry.id>')
  async record(entry: { id?: string }): Promise<string> {
    return `${entry.id} under ${this.locks.current()?.key}`;
  }
}

describe('key templates: checked when the decorator is applied', () => {
  it('throws LockConfigError for an unknown parameter, naming the method and listing its parameters', () => {
    const define = () => {
      class Billing {
        @WriteLocked('invoice:<nope>')
        charge(invoiceId: string, amount: number) {
          return [invoiceId, amount];
        }
      }
      return Billing;
    };
    expect(define).toThrow(LockConfigError);
    const message = (() => {
      try {
        define();
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toContain('Billing.charge');
    expect(message).toContain('<nope>');
    expect(message).toContain('<invoiceId>');
    expect(message).toContain('<amount>');
  });

  it('throws LockConfigError for an index past the last parameter, and accepts known names, paths and indexes', () => {
    const outOfRange = () => {
      class Shelf {
        @ReadLocked('shelf:<3>')
        look(row: number) {
          return row;
        }
      }
      return Shelf;
    };
    expect(outOfRange).toThrow(LockConfigError);
    expect(outOfRange).toThrow(/Shelf\.look/);

    const fine = () => {
      class Shelf {
        @ReadLocked(['shelf:<0>', 'row:<row>', 'box:<box.label.text>'])
        look(row: number, box: { label: { text: string } }) {
          return [row, box];
        }
      }
      return Shelf;
    };
    expect(fine).not.toThrow();
  });

  it('refuses two lock decorators on one method', () => {
    const define = () => {
      class Twice {
        @ReadLocked('a:<id>')
        @WriteLocked('b:<id>')
        run(id: string) {
          return id;
        }
      }
      return Twice;
    };
    expect(define).toThrow(LockConfigError);
    expect(define).toThrow(/Twice\.run/);
  });
});

describe('key templates: resolved at call time', () => {
  const kit = new LockTestKit();
  let t: LockTestApp;

  beforeEach(async () => {
    t = await kit.app({ controllers: [KeysController], providers: [Ledger] });
  });
  afterEach(async () => {
    await kit.closeAll();
  });

  it('resolves <0> to the first argument', async () => {
    const r = await request(t.http).post('/keys/42/by-index');
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ keys: ['first:42'], modes: ['write'] });
    await waitUntilFree(t.locks, 'first:42');
  });

  it('resolves a property path <dto.meta.account.id>, and answers 400 when a step is missing', async () => {
    const r = await request(t.http)
      .post('/keys/by-path')
      .send({ amount: 5, meta: { account: { id: 'acc-9' } } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ keys: ['account:acc-9'], modes: ['write'] });

    const redis = kit.redis();
    const missing = await request(t.http).post('/keys/by-path').send({ amount: 5, meta: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain('dto.meta.account.id');
    await waitUntilFree(t.locks, 'account:acc-9');
    expect(await lockKeysLeft(redis, t)).toEqual([]);
  });

  it('uses a key function of the arguments', async () => {
    const r = await request(t.http).post('/keys/7/by-function').send({ owner: 'ann' });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ keys: ['fn:ann:7'], modes: ['write'] });
  });

  it('takes every key of an array (sorted, all or nothing) and times out on the one that is taken', async () => {
    const r = await request(t.http).post('/keys/b/a/transfer');
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ keys: ['wallet:a', 'wallet:b'], modes: ['write', 'write'] });
    await waitUntilFree(t.locks, 'wallet:a');
    await waitUntilFree(t.locks, 'wallet:b');

    const held = await t.locks.acquire('wallet:b');
    try {
      const conflict = await request(t.http).post('/keys/a/b/transfer');
      expect(conflict.status).toBe(409);
      expect(conflict.body).toMatchObject({ key: 'wallet:b', keys: ['wallet:a', 'wallet:b'] });
      // All or nothing: the key it did get was given back.
      expect(await t.locks.inspect('wallet:a')).toBeNull();
    } finally {
      await held.release();
    }
  });

  it('takes every key a function returns, in the decorator’s mode', async () => {
    const r = await request(t.http).post('/keys/x/y/function-array');
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ keys: ['pair:x', 'pair:y'], modes: ['read', 'read'] });
  });

  it('rejects an empty key from a key function, and a missing path on a service method, with LockKeyError', async () => {
    const ledger = t.app.get(Ledger);
    await expect(ledger.emptyKey()).rejects.toBeInstanceOf(LockKeyError);
    await expect(ledger.record({})).rejects.toThrow(/entry\.id/);
    await expect(ledger.record({ id: 'e1' })).resolves.toBe('e1 under entry:e1');
    const redis = kit.redis();
    await waitUntilFree(t.locks, 'entry:e1');
    expect(await lockKeysLeft(redis, t)).toEqual([]);
  });
});
