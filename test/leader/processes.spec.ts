import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { WorkerMessage } from '../fixtures/worker-protocol.js';
import { LockTestKit, redisUrl, sleep, until } from '../support/lock-test-kit.js';
import { WorkerProcess } from '../support/worker-process.js';

const LEASE_MS = 2_000;

type Elected = Extract<WorkerMessage, { type: 'elected' }>;

/** Three worker processes campaigning for one name, each ready. */
async function candidates(kit: LockTestKit, name = 'relay') {
  const prefix = kit.engine().settings.keyPrefix;
  const redis = kit.redis();
  const fencedKey = `${prefix}fenced-store`;
  kit.add(() => redis.del(fencedKey));
  const task = {
    kind: 'leader',
    url: redisUrl(),
    prefix,
    name,
    leaseMs: LEASE_MS,
    restartDelayMs: 200,
    fencedKey,
  } as const;
  const workers = Array.from({ length: 3 }, () => WorkerProcess.start(kit, task));
  await Promise.all(workers.map((w) => w.next('ready', 20_000)));
  return { workers, redis, fencedKey };
}

/** The next worker of `among` to report `elected`: which, with its message, and when it was seen. */
async function nextElected(among: readonly WorkerProcess[], timeoutMs: number) {
  let found: { worker: WorkerProcess; message: Elected; at: number } | undefined;
  await until(
    () => {
      for (const worker of among) {
        const message = worker.take('elected');
        if (message) found = { worker, message, at: performance.now() };
      }
      return found !== undefined;
    },
    timeoutMs,
    'a leader elected',
  );
  return found!;
}

/** SIGTERM to each: its engine closes, releasing what it holds (a SIGKILL would leave the leader's lock to expire). */
async function closeAll(workers: readonly WorkerProcess[]): Promise<void> {
  await Promise.all(workers.map((w) => w.kill('SIGTERM')));
}

describe('leader election across processes', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll(), 20_000);

  it('one leader among 3 processes; SIGKILLed, a standby leads within leaseMs + 1 s', async () => {
    const { workers } = await candidates(kit);
    const first = await nextElected(workers, 10_000);
    // Nobody else is elected while the leader lives (a few renewals long).
    await sleep(LEASE_MS);
    expect(workers.filter((w) => w.take('elected'))).toEqual([]);

    const killedAt = performance.now();
    await first.worker.kill('SIGKILL');
    const standbys = workers.filter((w) => w !== first.worker);
    const next = await nextElected(standbys, LEASE_MS + 2_000);
    const handOverMs = next.at - killedAt;
    console.log(`leader SIGKILLed: a standby led after ${Math.round(handOverMs)} ms (leaseMs ${LEASE_MS})`);
    expect(handOverMs).toBeLessThan(LEASE_MS + 1_000);
    expect(next.message.term).toBeGreaterThan(first.message.term);
    await sleep(300);
    expect(standbys.filter((w) => w.take('elected'))).toEqual([]);
    await closeAll(standbys);
  }, 30_000);

  it('SIGTERM (the engine closes): the leader hands over within 1 s', async () => {
    const { workers } = await candidates(kit);
    const first = await nextElected(workers, 10_000);
    await sleep(300);
    const terminatedAt = performance.now();
    first.worker.signal('SIGTERM');
    const next = await nextElected(
      workers.filter((w) => w !== first.worker),
      3_000,
    );
    const handOverMs = next.at - terminatedAt;
    console.log(`leader SIGTERMed: a standby led after ${Math.round(handOverMs)} ms`);
    expect(handOverMs).toBeLessThan(1_000);
    expect((await first.worker.exited).code).toBe(0);
    await closeAll(workers);
  }, 30_000);

  it('SIGSTOP past its lease: a standby leads; on SIGCONT its signal is already aborted and its fenced write refused', async () => {
    const { workers, redis, fencedKey } = await candidates(kit);
    const first = await nextElected(workers, 10_000);
    await sleep(300);
    const stoppedAt = performance.now();
    first.worker.signal('SIGSTOP');
    const next = await nextElected(
      workers.filter((w) => w !== first.worker),
      LEASE_MS + 3_000,
    );
    const handOverMs = next.at - stoppedAt;
    console.log(`leader SIGSTOPped: a standby led after ${Math.round(handOverMs)} ms (leaseMs ${LEASE_MS})`);
    expect(handOverMs).toBeLessThan(LEASE_MS + 1_000);
    // Let the new leader write with its term, then wake the old one once it was stopped longer than its lease.
    await until(async () => Number(await redis.hget(fencedKey, 'term')) === next.message.term, 2_000, 'new term');
    await sleep(stoppedAt + LEASE_MS + 200 - performance.now());
    first.worker.signal('SIGCONT');
    const resumed = await first.worker.next('resumed', 5_000);
    expect(resumed).toMatchObject({ aborted: true, accepted: false });
    expect(await redis.hget(fencedKey, 'term')).toBe(String(next.message.term));
    await closeAll(workers);
  }, 30_000);
});
