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

  it('says what it waits for while requests that hold locks run on, reminds while it waits, and says when they finished', async () => {
    gate = deferred();
    inside = 0;
    const lines: string[] = [];
    const record = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
    const { app, http, locks } = await kit.app(
      { controllers: [JobsController] },
      { logger: { log: record('log'), warn: record('warn'), error: record('error'), debug: () => undefined } },
    );
    const calls = ['x', 'y'].map((id) => track(request(http).post(`/jobs/${id}`)));
    await until(() => inside === 2 && locks.heldCount === 2, 3_000, 'two requests holding their locks');
    const closing = track(app.close());
    try {
      await until(() => lines.some((l) => l.includes('shutting down')), 3_000, 'the shutdown line');
      const first = lines.find((l) => l.includes('shutting down'))!;
      expect(first).toMatch(/^log /);
      expect(first).toContain('2 locks');
      expect(first).toContain('"job:x"');
      expect(first).toContain('"job:y"');
      expect(first).toMatch(/no limit/);
      expect(first).toMatch(/within 30 s/); // the lease that frees them if the process is killed
      // While it waits, it says so again, with how long it has waited.
      await until(() => lines.some((l) => /still waiting after \d/.test(l)), 8_000, 'a reminder');
      expect(closing.settled).toBe(false);
    } finally {
      gate.resolve();
    }
    await Promise.all(calls.map((c) => c.promise));
    await closing.promise;
    expect(lines.filter((l) => /finished after \d/.test(l))).toHaveLength(1);
  }, 30_000);

  it('says nothing of the kind when no lock is held at shutdown', async () => {
    const lines: string[] = [];
    const record = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
    const { app } = await kit.app(
      { controllers: [JobsController] },
      { logger: { log: record('log'), warn: record('warn'), error: record('error'), debug: record('debug') } },
    );
    await app.close();
    expect(lines.filter((l) => /shutting down|waiting|finished after/.test(l))).toEqual([]);
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
