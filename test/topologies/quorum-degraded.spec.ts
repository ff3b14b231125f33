import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import { RedisProcess, answersPing } from '../support/faults.js';
import { LockTestKit, keysUnder, sleep, uniquePrefix } from '../support/lock-test-kit.js';

/*
 * Quorum mode with one master down must work as if nothing happened, apart from the dead master's bounded timeouts:
 * three engines doing locked read-increment-write cycles on one key keep going at about the same pace, and no
 * waiter sleeps through a free lock until its timeout.
 */
describe('quorum over 3 masters with one master killed mid-run', () => {
  const kit = new LockTestKit();
  let masters: RedisProcess[] = [];
  afterEach(async () => {
    try {
      await kit.closeAll();
    } finally {
      await Promise.all(masters.map((m) => m.dispose()));
      masters = [];
    }
  });

  /** 3 engines x `cycles` locked increments of one counter; `midway` runs once a third of them are done. */
  async function run(prefix: string, cycles: number, midway: () => Promise<void>) {
    const engines: LockEngine[] = Array.from({ length: 3 }, () =>
      kit.engine({
        redis: masters.map((m) => m.url),
        keyPrefix: prefix,
        commandTimeoutMs: 1_000,
        waitTimeoutMs: 30_000,
      }),
    );
    const counter = kit.redis();
    const counterKey = `${prefix}counter`;
    let done = 0;
    let triggered: Promise<void> | undefined;
    const longest: number[] = [];
    const started = performance.now();
    const failures: unknown[] = [];
    await Promise.all(
      engines.map(async (engine) => {
        for (let i = 0; i < cycles; i++) {
          const askedAt = performance.now();
          try {
            await engine.withLock('k', async () => {
              longest.push(performance.now() - askedAt);
              const value = Number((await counter.get(counterKey)) ?? 0);
              await counter.set(counterKey, value + 1);
            });
          } catch (err) {
            failures.push(err);
          }
          if (++done === cycles && !triggered) triggered = midway();
        }
      }),
    );
    await triggered;
    const total = performance.now() - started;
    const final = Number(await counter.get(counterKey));
    await counter.del(counterKey);
    return { total, final, failures, longestWait: Math.max(...longest) };
  }

  it('3 engines x 100 contended cycles: all granted, the slowest wait bounded, in under 3x the time with every master up', async () => {
    masters = await Promise.all([RedisProcess.start(), RedisProcess.start(), RedisProcess.start()]);
    const healthy = await run(uniquePrefix('degraded'), 100, async () => undefined);
    expect(healthy.failures).toEqual([]);
    expect(healthy.final).toBe(300);

    const prefix = uniquePrefix('degraded');
    const degraded = await run(prefix, 100, async () => {
      await masters[0].kill();
    });
    console.log(
      `quorum, 300 contended cycles: all masters up ${healthy.total.toFixed(0)} ms (longest wait ${healthy.longestWait.toFixed(0)} ms); ` +
        `one master killed after 100 ${degraded.total.toFixed(0)} ms (longest wait ${degraded.longestWait.toFixed(0)} ms)`,
    );
    expect(degraded.failures.map(String)).toEqual([]);
    expect(degraded.final).toBe(300);
    expect(degraded.total).toBeLessThan(Math.max(3 * healthy.total, healthy.total + 2_000));
    expect(degraded.longestWait).toBeLessThan(3_000);
    // Nothing left on the masters still up.
    for (const m of masters.slice(1)) {
      if (!(await answersPing('127.0.0.1', m.port))) continue;
      const client = new Redis(m.url);
      try {
        await sleep(0);
        expect(await keysUnder(client, prefix)).toEqual([]);
      } finally {
        client.disconnect();
      }
    }
  }, 120_000);
});
