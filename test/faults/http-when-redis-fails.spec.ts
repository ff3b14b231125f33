import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Param } from '@nestjs/common';
import request from 'supertest';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { RedisProcess } from '../support/faults.js';
import { LockTestKit } from '../support/lock-test-kit.js';

const COMMAND_MS = 400;
const WAIT_MS = 600;
const SLACK_MS = 800;

@Controller('items')
class ItemsController {
  @Get(':id')
  @WriteLocked('item:<id>')
  get(@Param('id') id: string) {
    return { id };
  }
}

/** A decorated route while Redis is paused or down: a bounded 503 with Retry-After, never a hang or a raw 500. */
describe('HTTP when Redis fails', () => {
  const kit = new LockTestKit();
  let server: RedisProcess;

  beforeAll(async () => {
    server = await RedisProcess.start();
  });
  afterEach(async () => {
    if (server.paused) server.resume();
    await kit.closeAll();
  });
  afterAll(() => server.dispose());

  it('answers 503 with Retry-After within waitTimeoutMs + commandTimeoutMs, paused or down, and 200 once Redis is back', async () => {
    const t = await kit.app(
      { controllers: [ItemsController] },
      { redis: server.url, commandTimeoutMs: COMMAND_MS, waitTimeoutMs: WAIT_MS },
    );
    expect((await request(t.http).get('/items/1')).status).toBe(200);

    server.pause();
    let start = performance.now();
    const paused = await request(t.http).get('/items/1');
    expect(performance.now() - start).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
    expect(paused.status).toBe(503);
    expect(paused.headers['retry-after']).toBe('1');
    expect(paused.body).toMatchObject({
      statusCode: 503,
      error: 'Service Unavailable',
      key: 'item:1',
      reason: 'timeout',
    });
    server.resume();

    await server.kill();
    start = performance.now();
    const down = await request(t.http).get('/items/2');
    expect(performance.now() - start).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('1');
    expect(['unreachable', 'timeout']).toContain(down.body.reason);
    expect(JSON.stringify(down.body)).not.toMatch(/ECONNREFUSED|MaxRetries|Connection is closed/);

    await server.restart();
    for (let i = 0; ; i++) {
      const again = await request(t.http).get('/items/2');
      if (again.status === 200) break;
      expect(i).toBeLessThan(50);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
