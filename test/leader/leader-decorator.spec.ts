import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Inject, Injectable } from '@nestjs/common';
import { Leader } from '../../lib/decorators/leader.decorator.js';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import type { Leadership } from '../../lib/leader/leader.types.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { MemoryLockWorld } from '../../lib/testing/memory-lock-world.js';
import { RedisLockTestingModule } from '../../lib/testing/redis-lock-testing.module.js';
import { LockTestKit, until } from '../support/lock-test-kit.js';

const APP_ID = 'APP_ID';

interface Run {
  readonly app: string;
  readonly term: number;
  readonly at: number;
  ended?: number;
}

/** What the relays of a test ran (the decorated classes are shared by the tests of this file). */
const runs: Run[] = [];

@Injectable()
class OutboxRelay {
  constructor(@Inject(APP_ID) private readonly app: string) {}

  @Leader('outbox-relay', { leaseMs: 2_000, restartDelayMs: 100 })
  async relay(lead: Leadership): Promise<void> {
    const run: Run = { app: this.app, term: lead.term, at: performance.now() };
    runs.push(run);
    await new Promise<void>((resolve) => lead.signal.addEventListener('abort', () => resolve(), { once: true }));
    run.ended = performance.now();
  }
}

const providers = (app: string) => [OutboxRelay, { provide: APP_ID, useValue: app }];

describe('@Leader', () => {
  const kit = new LockTestKit();
  afterEach(async () => {
    await kit.closeAll();
    runs.length = 0;
  });

  it('in two real Nest apps, one runs the method; closing it hands over to the other within a second', async () => {
    const a = await kit.app({ providers: providers('a') });
    const b = await kit.app({ providers: providers('b') }, { keyPrefix: a.prefix });
    await until(() => runs.length === 1, 5_000, 'one app elected');
    await new Promise((r) => setTimeout(r, 500));
    expect(runs).toHaveLength(1);
    const [leader, standby] = runs[0].app === 'a' ? [a, b] : [b, a];
    expect(leader.locks.isLeader('outbox-relay')).toBe(true);
    expect(standby.locks.isLeader('outbox-relay')).toBe(false);
    expect(await standby.locks.leader('outbox-relay')).toMatchObject({ pid: process.pid, term: runs[0].term });

    const closedAt = performance.now();
    await leader.app.close();
    expect(runs[0].ended).toBeDefined();
    await until(() => runs.length === 2, 1_000, 'the other app elected');
    console.log(`@Leader app closed: the other app led after ${Math.round(runs[1].at - closedAt)} ms`);
    expect(runs[1].app).not.toBe(runs[0].app);
    expect(runs[1].term).toBeGreaterThan(runs[0].term);
  }, 20_000);

  it('works on RedisLockTestingModule (memory world): one module runs it, closing it hands over', async () => {
    const world = new MemoryLockWorld();
    const modules = await Promise.all(
      ['a', 'b'].map((app) =>
        kit.compile({ imports: [RedisLockTestingModule.forRoot({ world })], providers: providers(app) }),
      ),
    );
    for (const m of modules) await m.init();
    await until(() => runs.length === 1, 3_000, 'one module elected');
    const leader = modules[runs[0].app === 'a' ? 0 : 1];
    expect(leader.get(LockService).isLeader('outbox-relay')).toBe(true);
    await leader.close();
    await until(() => runs.length === 2, 1_000, 'the other module elected');
    expect(runs[1].app).not.toBe(runs[0].app);
  }, 10_000);

  it('checks its options when the class is defined, and a call by hand runs the method as it is', async () => {
    expect(() => {
      class Bad {
        @Leader('x', { leaseMs: 1 })
        run(): void {}
      }
      return Bad;
    }).toThrow(LockConfigError);
    expect(() => {
      class Bad {
        @Leader('x', { restartDelayMs: -5 })
        run(): void {}
      }
      return Bad;
    }).toThrow(/@Leader on Bad\.run: invalid restartDelayMs/);
    class ByHand {
      @Leader('by-hand')
      run(lead: Leadership): number {
        return lead.term;
      }
    }
    expect(new ByHand().run({ term: 7 } as Leadership)).toBe(7);
    expect(ByHand.prototype.run.name).toBe('run');
  });
});
