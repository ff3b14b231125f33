// A leadership lasts and its standbys wait by design: the deadlock alarm leaves them out unless a role asks for it.
// A leader whose function ignores its signal holds up a shutdown for `shutdownTimeoutMs` at most.
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Inject, Injectable } from '@nestjs/common';
import { Leader } from '../../lib/decorators/leader.decorator.js';
import { LockClosedError } from '../../lib/errors/lock-closed.error.js';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import type { Leadership } from '../../lib/leader/leader.types.js';
import type { HeldTooLongEvent } from '../../lib/locking/events/lock-events.js';
import { LockTestKit, deferred, sleep, until } from '../support/lock-test-kit.js';

/** Resolves once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

const APP_ID = 'APP_ID';
/** Which app's stubborn relay ran, and when (the class is shared by the apps of a test). */
const elected: { app: string; at: number; reason?: unknown }[] = [];
/** What the functions that ignore their signal wait for: the end of the test, not their signal. */
let endOfTest = deferred();

@Injectable()
class StubbornRelay {
  constructor(@Inject(APP_ID) private readonly app: string) {}

  /** Ignores its signal: it would keep a shutdown waiting for ever without the bound. */
  @Leader('stubborn', { leaseMs: 2_000, restartDelayMs: 100, shutdownTimeoutMs: 400 })
  async run(lead: Leadership): Promise<void> {
    const run: (typeof elected)[number] = { app: this.app, at: performance.now() };
    elected.push(run);
    lead.signal.addEventListener('abort', () => (run.reason = lead.signal.reason), { once: true });
    await endOfTest.promise;
  }
}

describe('leaderships and the deadlock alarm, and bounded shutdown', () => {
  const kit = new LockTestKit();
  afterEach(async () => {
    endOfTest.resolve();
    endOfTest = deferred();
    await kit.closeAll();
    elected.length = 0;
  });

  it('a leader and its standby are not reported by the deadlock alarm, unless the role asks (alarms: true)', async () => {
    const thresholds = { holdWarningMs: 150, waitWarningMs: 150 };
    const a = kit.engine(thresholds);
    const b = kit.peer(a, thresholds);
    const alarms: HeldTooLongEvent[] = [];
    for (const e of [a, b]) e.on('held-too-long', (event) => alarms.push(event));
    const fn = (lead: Leadership) => aborted(lead.signal);
    const stops = [a.campaign('quiet', fn), b.campaign('quiet', fn)];
    await until(() => a.isLeader('quiet') || b.isLeader('quiet'), 3_000, 'a leader');
    // A plain lock held and waited for as long is reported (the alarm is on).
    const held = await a.acquire('plain');
    const waiting = b.acquire('plain', { waitTimeoutMs: 5_000 });
    await sleep(800);
    await held.release();
    await (await waiting).release();
    expect(alarms.map((e) => `${e.detectedBy} ${e.key}`).sort()).toEqual(['holder plain', 'waiter plain']);
    expect(kit.logger.lines.filter((l) => l.includes('leader:quiet'))).toEqual([]);
    await Promise.all(stops.map((stop) => stop()));

    alarms.length = 0;
    const loud = [a.campaign('loud', fn, { alarms: true }), b.campaign('loud', fn, { alarms: true })];
    await until(
      () => alarms.some((e) => e.detectedBy === 'holder') && alarms.some((e) => e.detectedBy === 'waiter'),
      3_000,
      'the alarm on the leader and on its standby',
    );
    expect(new Set(alarms.map((e) => e.key))).toEqual(new Set(['leader:loud']));
    await Promise.all(loud.map((stop) => stop()));
    expect(() => a.campaign('x', fn, { alarms: 'yes' as unknown as boolean })).toThrow(LockConfigError);
  }, 15_000);

  it('a leader whose engine closes is told it was leading, and which term', async () => {
    const a = kit.engine();
    let reason: unknown;
    let term = 0;
    a.campaign('told', async (lead) => {
      term = lead.term;
      await aborted(lead.signal);
      reason = lead.signal.reason;
    });
    await until(() => a.isLeader('told'), 3_000, 'elected');
    await a.close();
    expect(reason).toBeInstanceOf(LockClosedError);
    expect((reason as Error).message).toBe(
      `the lock service is closed while leading "told" (term ${term}): the application is shutting down`,
    );
  });

  it('engine close waits shutdownTimeoutMs at most for a function that ignores its signal, then releases', async () => {
    const a = kit.engine();
    const b = kit.peer(a);
    let bLedAt = 0;
    a.campaign('ignores', () => endOfTest.promise, { shutdownTimeoutMs: 300 });
    await until(() => a.isLeader('ignores'), 3_000, 'a elected');
    b.campaign('ignores', (lead) => ((bLedAt = performance.now()), aborted(lead.signal)));
    await sleep(100);
    const closing = performance.now();
    await a.close();
    const took = performance.now() - closing;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(2_000);
    await until(() => bLedAt > 0, 1_000, 'b elected');
    expect(bLedAt - closing).toBeLessThan(1_500);
    expect(
      kit.logger.lines.some((l) => /^error: leader "ignores" \(term \d+\).*shutdownTimeoutMs \(300 ms\)/.test(l)),
    ).toBe(true);
    expect(() => a.campaign('x', () => undefined, { shutdownTimeoutMs: -1 })).toThrow(/shutdownTimeoutMs/);
  }, 10_000);

  it('a Nest app whose @Leader method ignores its signal shuts down within shutdownTimeoutMs; a standby leads', async () => {
    const providers = (app: string) => [StubbornRelay, { provide: APP_ID, useValue: app }];
    const a = await kit.app({ providers: providers('a') }, { logger: kit.logger });
    const b = await kit.app({ providers: providers('b') }, { keyPrefix: a.prefix, logger: kit.logger });
    await until(() => elected.length === 1, 5_000, 'one app elected');
    const leader = elected[0].app === 'a' ? a : b;
    const closing = performance.now();
    await leader.app.close();
    const took = performance.now() - closing;
    expect(took).toBeLessThan(3_000);
    await until(() => elected.length === 2, 1_500, 'the other app elected');
    expect(elected[1].app).not.toBe(elected[0].app);
    expect(kit.logger.lines.some((l) => l.startsWith('error: leader "stubborn"'))).toBe(true);
    // Its signal said why: the application shut down while it was leading.
    expect(String((elected[0].reason as Error).message)).toMatch(/closed while leading "stubborn" \(term \d+\)/);
  }, 15_000);
});
