import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { Observable, lastValueFrom, map, timer } from 'rxjs';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { ReadLocked } from '../../lib/decorators/read-locked.decorator.js';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockRegistry } from '../../lib/nest/lock-registry.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import type {
  RedisLockModuleOptions,
  RedisLockOptionsFactory,
} from '../../lib/nest/redis-lock-module-options.interface.js';
import { Timeline, compileOrCleanUp, waitUntilFree } from '../support/nest-app.js';
import { LockTestKit, keysUnder, redisUrl, uniquePrefix, until } from '../support/lock-test-kit.js';

const SLOW_MS = 120;
const timeline = new Timeline();
const ran = { publish: 0, plain: 0 };

/** A plain service with decorated methods, called from tests rather than through HTTP. */
@Injectable()
class Publisher {
  constructor(private readonly locks: LockService) {}

  @WriteLocked('post:<id>')
  async publish(id: string, ms = 0) {
    ran.publish++;
    const info = await this.locks.inspect(`post:${id}`);
    const current = this.locks.current();
    await timeline.run(`publish ${id}`, ms);
    return { info, currentKey: current?.key, currentMode: current?.mode };
  }

  @ReadLocked('post:<id>')
  async read(id: string, ms = 0) {
    await timeline.run(`read ${id}`, ms);
    return this.locks.current()?.mode;
  }

  @WriteLocked('post:<id>')
  async fail(id: string): Promise<never> {
    throw new Error(`cannot publish ${id}`);
  }

  /** Declared Observable: locked from subscription until completion. */
  @WriteLocked('feed:<id>')
  watch(id: string): Observable<string> {
    return timer(150).pipe(map(() => `feed ${id} done`));
  }
}

@Module({ providers: [Publisher], exports: [Publisher] })
class PublishingModule {}

/** A decorated service with no dependencies, for apps without the lock module. */
@Injectable()
class PlainJob {
  @WriteLocked('job:<id>')
  async run(id: string) {
    ran.plain++;
    return id;
  }
}

interface LockSettings {
  readonly url: string;
  readonly prefix: string;
}
const LOCK_SETTINGS = Symbol('LOCK_SETTINGS');
let settings: LockSettings = { url: '', prefix: '' };

@Module({ providers: [{ provide: LOCK_SETTINGS, useFactory: () => settings }], exports: [LOCK_SETTINGS] })
class SettingsModule {}

@Injectable()
class LockOptionsFactory implements RedisLockOptionsFactory {
  createRedisLockOptions(): RedisLockModuleOptions {
    return { redis: settings.url, keyPrefix: settings.prefix };
  }
}

@Module({ providers: [LockOptionsFactory], exports: [LockOptionsFactory] })
class LockOptionsModule {}

/** Runs `publish` slowly and checks, while it runs, that its lock lives under `prefix` in Redis. */
async function expectLocksUnder(app: INestApplicationContext, kit: LockTestKit, prefix: string): Promise<void> {
  const redis = kit.redis();
  const running = app.get(Publisher).publish('1', 100);
  // While `publish` holds its lock, the lock's keys exist under `prefix` (and only there).
  await until(async () => (await keysUnder(redis, prefix)).length > 0, 1_000, `lock keys under ${prefix}`);
  const { info } = await running;
  expect(info?.holders[0].holdCount).toBe(1);
  expect(await keysUnder(redis, prefix)).toEqual([]);
}

describe('RedisLockModule set-up', () => {
  const kit = new LockTestKit();

  beforeEach(() => {
    settings = { url: redisUrl(), prefix: uniquePrefix('setup') };
  });
  afterEach(async () => {
    await kit.closeAll();
  });

  it('forRootAsync with useFactory and inject', async () => {
    const app = await kit.startApp({
      imports: [
        RedisLockModule.forRootAsync({
          imports: [SettingsModule],
          inject: [LOCK_SETTINGS],
          useFactory: (s: LockSettings) => ({ redis: s.url, keyPrefix: s.prefix }),
        }),
      ],
      providers: [Publisher],
    });
    await expectLocksUnder(app, kit, settings.prefix);
  });

  it('forRootAsync with useClass', async () => {
    const app = await kit.startApp({
      imports: [RedisLockModule.forRootAsync({ useClass: LockOptionsFactory })],
      providers: [Publisher],
    });
    await expectLocksUnder(app, kit, settings.prefix);
  });

  it('forRootAsync with useExisting', async () => {
    const app = await kit.startApp({
      imports: [RedisLockModule.forRootAsync({ imports: [LockOptionsModule], useExisting: LockOptionsFactory })],
      providers: [Publisher],
    });
    await expectLocksUnder(app, kit, settings.prefix);
  });

  it.each([
    ['forRoot', () => RedisLockModule.forRoot({ redis: settings.url, keyPrefix: settings.prefix, isGlobal: true })],
    [
      'forRootAsync',
      () =>
        RedisLockModule.forRootAsync({
          isGlobal: true,
          useFactory: () => ({ redis: settings.url, keyPrefix: settings.prefix }),
        }),
    ],
  ])('%s with isGlobal: a module that does not import it still gets LockService', async (_name, lockModule) => {
    const app = await kit.startApp({ imports: [lockModule(), PublishingModule] });
    await expectLocksUnder(app, kit, settings.prefix);
  });

  it('without isGlobal, a module that does not import it cannot inject LockService', async () => {
    expect(LockRegistry.find() === undefined).toBe(true);
    await expect(
      compileOrCleanUp({
        imports: [RedisLockModule.forRoot({ redis: settings.url, keyPrefix: settings.prefix }), PublishingModule],
      }),
    ).rejects.toThrow(/LockService/);
    expect(LockRegistry.find() === undefined).toBe(true);
  });
});

describe('decorated service methods called outside HTTP', () => {
  const kit = new LockTestKit();
  let app: INestApplicationContext;
  let prefix: string;

  beforeEach(async () => {
    timeline.clear();
    ran.publish = 0;
    const t = await kit.app({ providers: [Publisher] });
    app = t.app;
    prefix = t.prefix;
  });
  afterEach(async () => {
    await kit.closeAll();
  });

  it('locks for the duration of the call, exposes the handle, and releases afterwards', async () => {
    const redis = kit.redis();
    const out = await app.get(Publisher).publish('1');
    expect(out.info?.mode).toBe('write');
    expect(out.info?.holders).toHaveLength(1);
    expect(out.info?.holders[0].holdCount).toBe(1);
    expect(out).toMatchObject({ currentKey: 'post:1', currentMode: 'write' });
    expect(await app.get(LockService).inspect('post:1')).toBeNull();
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('serialises concurrent writers and lets readers share', async () => {
    const publisher = app.get(Publisher);
    await Promise.all([
      publisher.publish('2', SLOW_MS),
      publisher.publish('2', SLOW_MS),
      publisher.publish('2', SLOW_MS),
    ]);
    expect(timeline.spans).toHaveLength(3);
    expect(timeline.overlaps()).toBe(false);

    timeline.clear();
    const modes = await Promise.all([publisher.read('2', SLOW_MS), publisher.read('2', SLOW_MS)]);
    expect(modes).toEqual(['read', 'read']);
    expect(timeline.overlaps()).toBe(true);
  });

  it('releases when the method throws', async () => {
    const publisher = app.get(Publisher);
    await expect(publisher.fail('3')).rejects.toThrow('cannot publish 3');
    expect(await app.get(LockService).inspect('post:3')).toBeNull();
  });

  it('locks an Observable method from subscription to completion', async () => {
    const locks = app.get(LockService);
    const acquired: string[] = [];
    locks.on('acquired', (e) => acquired.push(e.key));
    const feed = app.get(Publisher).watch('4');
    // An eager acquisition would have been sent before this inspect, on the same connection: it would show here.
    expect(await locks.inspect('feed:4')).toBeNull();
    expect(acquired).toEqual([]);

    const done = lastValueFrom(feed);
    await until(async () => (await locks.inspect('feed:4'))?.mode === 'write', 1_000, 'the lock taken on subscription');
    expect(acquired).toEqual(['feed:4']);
    expect(await done).toBe('feed 4 done');
    // The release starts as the Observable completes.
    await waitUntilFree(locks, 'feed:4');
  });
});

describe('decorated methods without an initialised RedisLockModule', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  beforeEach(() => {
    ran.plain = 0;
    // The registry is process-wide: every app of the tests above must be closed by now.
    expect(LockRegistry.find() === undefined).toBe(true);
  });

  it('refuses to run, with a LockConfigError saying the module is not initialised (a rejection, not a throw)', async () => {
    const call = new PlainJob().run('1');
    expect(call).toBeInstanceOf(Promise);
    await expect(call).rejects.toBeInstanceOf(LockConfigError);
    await expect(new PlainJob().run('1')).rejects.toThrow(/PlainJob\.run.*not initialised/);
    expect(ran.plain).toBe(0);
  });

  it('refuses to run inside an app that does not import RedisLockModule', async () => {
    const app = await kit.startApp({ providers: [PlainJob] });
    await expect(app.get(PlainJob).run('1')).rejects.toThrow(/not initialised/);
    expect(ran.plain).toBe(0);
  });

  it('refuses to run again once the app that had the module is closed', async () => {
    const t = await kit.app({ providers: [PlainJob] });
    await expect(t.app.get(PlainJob).run('1')).resolves.toBe('1');
    expect(ran.plain).toBe(1);
    await kit.closeAll();
    await expect(new PlainJob().run('2')).rejects.toBeInstanceOf(LockConfigError);
    expect(ran.plain).toBe(1);
  });
});
