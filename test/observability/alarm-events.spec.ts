import { afterEach, describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import type { HeldTooLongEvent, LockEvents } from '../../lib/locking/events/lock-events.js';
import { LockTestKit, sleep, until } from '../support/lock-test-kit.js';

describe('events and the held-too-long alarm', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('fires acquired, contended, released, timeout and lost exactly when they happen', async () => {
    const engine = kit.engine({
      holdWarningMs: 0,
      waitWarningMs: 0,
      logger: { warn: () => undefined, error: () => undefined },
    });
    const seen: string[] = [];
    const payloads: Partial<{ [E in keyof LockEvents]: LockEvents[E][] }> = {};
    for (const name of ['acquired', 'released', 'contended', 'timeout', 'lost'] as const) {
      engine.on(name, (e: LockEvents[typeof name]) => {
        seen.push(`${name}:${e.key}`);
        ((payloads[name] ??= []) as unknown[]).push(e);
      });
    }
    const a = await engine.acquire('e1');
    expect(seen).toEqual(['acquired:e1']);
    await expect(engine.acquire('e1', { waitTimeoutMs: 50 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    expect(seen).toEqual(['acquired:e1', 'contended:e1', 'timeout:e1']);
    expect(payloads.timeout![0].waitedMs).toBeGreaterThanOrEqual(45);
    await sleep(30);
    await a.release();
    expect(seen.at(-1)).toBe('released:e1');
    expect(payloads.released![0].heldMs).toBeGreaterThanOrEqual(75);
    // Re-entry: acquired twice (the second flagged reentrant), released once, when the outer level ends.
    seen.length = 0;
    await engine.withLock('e2', () => engine.withLock('e2', () => undefined));
    expect(seen).toEqual(['acquired:e2', 'acquired:e2', 'released:e2']);
    expect(payloads.acquired!.slice(-2).map((e) => e.reentrant)).toEqual([false, true]);
    // Lost: forced free from outside.
    seen.length = 0;
    const b = await engine.acquire('e3');
    await engine.forceRelease('e3');
    expect(seen).toEqual(['acquired:e3', 'lost:e3']);
    expect(b.signal.aborted).toBe(true);
    expect(payloads.lost![0].error.reason).toBe('not-in-redis');
  });

  it('reports a hold kept past holdWarningMs once, with the holder identity, and logs a warning', async () => {
    const warnings: string[] = [];
    const engine = kit.engine({
      holdWarningMs: 150,
      waitWarningMs: 0,
      logger: { warn: (m) => warnings.push(m), error: () => undefined },
    });
    const alarms: HeldTooLongEvent[] = [];
    engine.on('held-too-long', (e) => alarms.push(e));
    const short = await engine.acquire('quick');
    await short.release();
    const h = await engine.acquire('stuck');
    await until(() => alarms.length > 0, 2_000, 'the held-too-long alarm');
    await sleep(300); // several alarm checks (every 50 ms here): still reported once
    expect(alarms).toHaveLength(1);
    expect(alarms[0]).toMatchObject({ key: 'stuck', mode: 'write', detectedBy: 'holder' });
    expect(alarms[0].heldMs).toBeGreaterThanOrEqual(150);
    expect(alarms[0].holders[0]).toMatchObject({ pid: process.pid, owner: alarms[0].owner });
    expect(warnings.filter((w) => w.includes('"stuck"'))).toHaveLength(1);
    await h.release();
  });

  it('reports a waiter stuck past waitWarningMs once, naming the holder read from Redis', async () => {
    const holderEngine = kit.engine({ holdWarningMs: 0, waitWarningMs: 0, appName: 'holder-app' });
    const waiterEngine = kit.engine({
      keyPrefix: holderEngine.settings.keyPrefix,
      holdWarningMs: 0,
      waitWarningMs: 150,
      logger: { warn: () => undefined, error: () => undefined },
    });
    const alarms: HeldTooLongEvent[] = [];
    waiterEngine.on('held-too-long', (e) => alarms.push(e));
    const h = await holderEngine.acquire('deadlock?');
    const waiting = waiterEngine.acquire('deadlock?', { waitTimeoutMs: 600 }).catch((e: unknown) => e);
    await until(() => alarms.length > 0, 2_000, 'the waiter-side alarm');
    expect(alarms).toHaveLength(1);
    expect(alarms[0]).toMatchObject({ key: 'deadlock?', detectedBy: 'waiter' });
    expect(alarms[0].waitedMs).toBeGreaterThanOrEqual(150);
    expect(alarms[0].holders).toHaveLength(1);
    expect(alarms[0].holders[0]).toMatchObject({ app: 'holder-app', pid: process.pid, mode: 'write' });
    expect(await waiting).toBeInstanceOf(LockAcquireTimeoutError);
    expect(alarms).toHaveLength(1);
    await h.release();
  });

  it("reports a waiter on a semaphore stuck past waitWarningMs once, naming the semaphore's holders read from Redis", async () => {
    const holderEngine = kit.engine({ holdWarningMs: 0, waitWarningMs: 0, appName: 'permit-app' });
    const warnings: string[] = [];
    const waiterEngine = kit.engine({
      keyPrefix: holderEngine.settings.keyPrefix,
      holdWarningMs: 0,
      waitWarningMs: 150,
      logger: { warn: (m) => warnings.push(m), error: () => undefined },
    });
    const alarms: HeldTooLongEvent[] = [];
    waiterEngine.on('held-too-long', (e) => alarms.push(e));
    const permits = [
      await holderEngine.acquirePermit('exports', { limit: 2 }),
      await holderEngine.acquirePermit('exports', { limit: 2 }),
    ];
    const waiting = waiterEngine.acquirePermit('exports', { limit: 2, waitTimeoutMs: 600 }).catch((e: unknown) => e);
    await until(() => alarms.length > 0, 2_000, 'the waiter-side alarm');
    expect(alarms[0]).toMatchObject({ key: 'exports', detectedBy: 'waiter', mode: 'write' });
    expect(alarms[0].waitedMs).toBeGreaterThanOrEqual(150);
    expect(alarms[0].holders).toHaveLength(2);
    for (const holder of alarms[0].holders)
      expect(holder).toMatchObject({ app: 'permit-app', pid: process.pid, mode: 'write' });
    const owners = (await holderEngine.inspectPermits('exports'))!.holders.map((h) => h.owner).sort();
    expect(alarms[0].holders.map((h) => h.owner).sort()).toEqual(owners);
    expect(warnings.filter((w) => w.includes('"exports"') && w.includes('permit-app'))).toHaveLength(1);
    expect(await waiting).toBeInstanceOf(LockAcquireTimeoutError);
    expect(alarms).toHaveLength(1);
    for (const permit of permits) await permit.release();
  });
});
