import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  Body,
  Controller,
  Get,
  Header,
  HttpCode,
  Injectable,
  Param,
  Put,
  SetMetadata,
  UseGuards,
  UseInterceptors,
  UsePipes,
} from '@nestjs/common';
import type {
  ArgumentMetadata,
  CallHandler,
  CanActivate,
  ExecutionContext,
  NestInterceptor,
  PipeTransform,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map } from 'rxjs';
import request from 'supertest';
import { ReadLocked } from '../../lib/decorators/read-locked.decorator.js';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { waitUntilFree } from '../support/nest-app.js';
import type { LockTestApp } from '../support/nest-app.js';
import { LockTestKit, commandStats, scriptCalls } from '../support/lock-test-kit.js';

const ROLE = 'test:role';
const guarded = { calls: 0, role: undefined as unknown };

/** Accepts a request whose `x-role` header equals the handler's `ROLE` metadata (read through the Reflector). */
@Injectable()
class RoleGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}
  canActivate(context: ExecutionContext): boolean {
    guarded.calls++;
    const role = this.reflector.get<string | undefined>(ROLE, context.getHandler());
    guarded.role = role;
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return role !== undefined && request.headers['x-role'] === role;
  }
}

@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

/** Upper-cases route parameters: shows that pipes run, and run before the key is resolved. */
class UpperCaseParamPipe implements PipeTransform {
  transform(value: unknown, meta: ArgumentMetadata): unknown {
    return meta.type === 'param' && typeof value === 'string' ? value.toUpperCase() : value;
  }
}

/** A user interceptor next to the lock interceptor: wraps the body. */
class EnvelopeInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle().pipe(map((data: unknown) => ({ envelope: data })));
  }
}

/** @WriteLocked written above every other decorator: it is applied last. */
@Controller('above')
class LockAboveController {
  constructor(private readonly locks: LockService) {}

  @WriteLocked('item:<id>')
  @Put(':id')
  @HttpCode(202)
  @Header('X-Locked', 'yes')
  @UsePipes(UpperCaseParamPipe)
  @UseGuards(RoleGuard)
  @SetMetadata(ROLE, 'editor')
  async update(@Param('id') id: string, @Body() body: { title?: string }) {
    return {
      id,
      title: body.title,
      key: this.locks.current()?.key,
      held: (await this.locks.inspect(`item:${id}`))?.mode,
    };
  }

  @ReadLocked('item:<id>')
  @Get(':id/denied')
  @UseGuards(DenyGuard)
  denied(@Param('id') id: string) {
    return { id };
  }

  @WriteLocked('item:<id>')
  @Get(':id/enveloped')
  @UseInterceptors(EnvelopeInterceptor)
  async enveloped(@Param('id') id: string) {
    return { id, key: this.locks.current()?.key };
  }
}

/** @WriteLocked written below every other decorator: it is applied first. */
@Controller('below')
class LockBelowController {
  constructor(private readonly locks: LockService) {}

  @SetMetadata(ROLE, 'editor')
  @UseGuards(RoleGuard)
  @UsePipes(UpperCaseParamPipe)
  @Header('X-Locked', 'yes')
  @HttpCode(202)
  @Put(':id')
  @WriteLocked('item:<id>')
  async update(@Param('id') id: string, @Body() body: { title?: string }) {
    return {
      id,
      title: body.title,
      key: this.locks.current()?.key,
      held: (await this.locks.inspect(`item:${id}`))?.mode,
    };
  }

  @UseGuards(DenyGuard)
  @Get(':id/denied')
  @ReadLocked('item:<id>')
  denied(@Param('id') id: string) {
    return { id };
  }

  @UseInterceptors(EnvelopeInterceptor)
  @Get(':id/enveloped')
  @WriteLocked('item:<id>')
  async enveloped(@Param('id') id: string) {
    return { id, key: this.locks.current()?.key };
  }
}

describe.each([
  ['above', LockAboveController],
  ['below', LockBelowController],
])('@WriteLocked written %s the other decorators', (base, ControllerClass) => {
  const kit = new LockTestKit();
  let t: LockTestApp;

  beforeEach(async () => {
    guarded.calls = 0;
    guarded.role = undefined;
    t = await kit.app({ controllers: [ControllerClass], providers: [RoleGuard, DenyGuard] });
  });
  afterEach(async () => {
    await kit.closeAll();
  });

  it('keeps the method’s name and length', () => {
    expect(ControllerClass.prototype.update.name).toBe('update');
    expect(ControllerClass.prototype.update.length).toBe(2);
    expect(ControllerClass.prototype.denied.name).toBe('denied');
    expect(ControllerClass.prototype.denied.length).toBe(1);
  });

  it('keeps route, HttpCode, Header, pipe, guard and custom metadata, and locks the piped key', async () => {
    const r = await request(t.http).put(`/${base}/abc`).set('x-role', 'editor').send({ title: 'T' });
    expect(r.status).toBe(202);
    expect(r.headers['x-locked']).toBe('yes');
    // The pipe ran before the key was built: the lock is on the transformed argument.
    expect(r.body).toEqual({ id: 'ABC', title: 'T', key: 'item:ABC', held: 'write' });
    expect(guarded).toEqual({ calls: 1, role: 'editor' });
    await waitUntilFree(t.locks, 'item:ABC');
  });

  it('lets the guard reject before any lock is taken', async () => {
    // On a private server, so every lock script call counted below is this app's.
    const own = await kit.isolatedApp({ controllers: [ControllerClass], providers: [RoleGuard, DenyGuard] });
    await own.admin.config('RESETSTAT');
    const wrongRole = await request(own.http).put(`/${base}/abc`).set('x-role', 'reader').send({ title: 'T' });
    expect(wrongRole.status).toBe(403);
    expect(guarded).toEqual({ calls: 1, role: 'editor' });
    const denied = await request(own.http).get(`/${base}/abc/denied`);
    expect(denied.status).toBe(403);
    expect(scriptCalls(await commandStats(own.admin))).toBe(0);

    // The same route with the right role does take the lock: the count above would have seen it.
    const allowed = await request(own.http).put(`/${base}/abc`).set('x-role', 'editor').send({ title: 'T' });
    expect(allowed.status).toBe(202);
    await waitUntilFree(own.locks, 'item:ABC');
    expect(scriptCalls(await commandStats(own.admin))).toBeGreaterThan(0);
  });

  it('works beside a user interceptor', async () => {
    const r = await request(t.http).get(`/${base}/7/enveloped`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ envelope: { id: '7', key: 'item:7' } });
    await waitUntilFree(t.locks, 'item:7');
  });
});
