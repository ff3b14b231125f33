import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Param, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import request from 'supertest';
import type { LockService } from '../../lib/nest/lock.service.js';
import type { LockTestApp } from '../support/nest-app.js';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockTestKit, deferred, keysUnder, track, until } from '../support/lock-test-kit.js';

/** Lets the handlers that hold a lock finish when the test says so. */
let gate = deferred();
let inside = 0;

@Controller('jobs')
class JobsController {
  @Post(':id')
  @WriteLocked('job:<id>', { waitTimeoutMs: 10_000 })
  async run(@Param('id') id: string): Promise<{ id: string }> {
    inside++;
    await gate.promise;
    return { id };
  }
}

describe('graceful shutdown under load', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('lets holders finish, rejects waiters with 503 at once, and leaves no lock key behind', async () => {
    gate = deferred();
    inside = 0;
    const { app, http, locks, prefix } = await kit.app(
      { controllers: [JobsController] },
      { logger: { warn: () => undefined, error: () => undefined } },
    );
    const admin = kit.redis();

    try {
      await shutDownUnderLoad(app, http, locks, prefix, admin);
    } finally {
      // Whatever failed above, let the holders finish so the app can close.
      gate.resolve();
    }
  });

  it('close lets a release still unanswered finish, also when Redis must load the script again (after a restart)', async () => {
    const server = await kit.server();
    const engine = kit.engine({ redis: server.url });
    const admin = kit.redis(server.url);
    const handle = await engine.acquire('k');
    // As after a Redis restart: the release's EVALSHA is answered NOSCRIPT, and the script goes out again with EVAL,
    // a round trip later. The release is under way when the engine closes its connections.
    await admin.script('FLUSH');
    const released = handle.release();
    await engine.close();
    expect(await released).toBe(true);
    expect(await keysUnder(admin, engine.settings.keyPrefix)).toEqual([]);
  });
});

async function shutDownUnderLoad(
  app: INestApplication,
  http: LockTestApp['http'],
  locks: LockService,
  prefix: string,
  admin: Redis,
): Promise<void> {
  // Two locks held ('a', 'b'), four requests waiting behind them.
  const calls = ['a', 'a', 'a', 'b', 'b', 'b'].map((id) =>
    track(
      request(http)
        .post(`/jobs/${id}`)
        .then((r) => r.status),
    ),
  );
  await until(
    async () => {
      const infos = await Promise.all(['job:a', 'job:b'].map((key) => locks.inspect(key)));
      return infos.every((info) => info?.mode === 'write' && info.waiting === 2);
    },
    3_000,
    'two holders with two waiters each',
  );
  expect(inside).toBe(2);

  const closing = track(app.close());
  // The waiters are turned away while the holders are still inside: shutdown does not wait for them.
  await until(() => calls.filter((c) => c.settled).length === 4, 3_000, 'the four waiters to be answered');
  expect(inside).toBe(2);
  expect(closing.settled).toBe(false);
  gate.resolve();
  const statuses = await Promise.all(calls.map((c) => c.promise));
  await closing.promise;
  // The two holders finished normally.
  expect(statuses.filter((s) => s === 201)).toHaveLength(2);
  expect(statuses.filter((s) => s === 503)).toHaveLength(4);
  expect(await keysUnder(admin, prefix)).toEqual([]);
}
