import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { WorkerTask } from '../fixtures/worker-protocol.js';
import { LockTestKit, deferred, redisNames, redisUrl, sleep, track, until } from '../support/lock-test-kit.js';
import { WorkerProcess } from '../support/worker-process.js';

/** Runs `processes` workers that each increment one counter `iterations` times; returns the final value and records. */
async function runCounters(kit: LockTestKit, locked: boolean, processes = 4, iterations = 100) {
  const prefix = kit.engine().settings.keyPrefix;
  const redis = kit.redis();
  const counterKey = `${prefix}counter`;
  const task: WorkerTask = {
    kind: 'counter',
    url: redisUrl(),
    prefix,
    lockKey: 'counter-lock',
    counterKey,
    iterations,
    locked,
  };
  const workers = Array.from({ length: processes }, () => WorkerProcess.start(kit, task));
  // Start every loop at once, so the processes really overlap.
  await Promise.all(workers.map((w) => w.next('ready')));
  for (const w of workers) w.send({ type: 'go' });
  const results = await Promise.all(workers.map((w) => w.next('done', 30_000)));
  await Promise.all(workers.map((w) => w.exited));
  const final = Number(await redis.get(counterKey));
  await redis.del(counterKey);
  return { final, records: results.flatMap((r) => r.records) };
}

describe('several processes', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('4 processes x 100 read-modify-write increments under withLock end at exactly 400, in fencing order', async () => {
    const { final, records } = await runCounters(kit, true);
    expect(final).toBe(400);
    // Each hold saw the value the previous hold wrote: sorted by fencing token, the values read are 0..399.
    const byFence = [...records].sort((a, b) => a[0] - b[0]);
    expect(new Set(byFence.map(([fence]) => fence)).size).toBe(400);
    expect(byFence.map(([, value]) => value)).toEqual(Array.from({ length: 400 }, (_, i) => i));
  }, 40_000);

  it('the same increments without the lock lose updates (so the test above can fail)', async () => {
    const { final } = await runCounters(kit, false);
    expect(final).toBeGreaterThan(0);
    expect(final).toBeLessThan(400);
  }, 40_000);

  it('a SIGKILLed holder frees the lock within its lease, and not before', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const leaseMs = 1_000;
    const holder = WorkerProcess.start(kit, {
      kind: 'hold',
      url: redisUrl(),
      prefix: engine.settings.keyPrefix,
      key: 'k',
      mode: 'write',
      leaseMs,
      autoExtend: true,
    });
    const held = await holder.next('held');
    // Let the child's watchdog renew a few times: the lock outlives its first lease while the process lives.
    await sleep(leaseMs * 1.5);
    const info = await engine.inspect('k');
    expect(info?.holders).toHaveLength(1);
    expect(info?.holders[0].pid).toBe(holder.pid);
    expect(info?.fencingToken).toBe(held.fencingToken);

    await holder.kill('SIGKILL');
    // What is left of the dead holder's lease, by Redis's clock (read atomically), counted from before the read.
    const leftAt = performance.now();
    // (A sole holder's lease is the state key's own expiry: the lock is then in its single-holder form.)
    const reply = await redis.multi().time().zscore(names.leases, held.token).pexpiretime(names.state).exec();
    const [seconds, micros] = reply![0][1] as [string, string];
    const score = (reply![1][1] as string | null) ?? String(reply![2][1]);
    const leftMs = Number(score) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    expect(leftMs).toBeGreaterThan(0);
    expect(leftMs).toBeLessThanOrEqual(leaseMs);
    expect(await engine.tryAcquire('k')).toBeNull();
    const lock = await engine.acquire('k', { waitTimeoutMs: 5_000 });
    const freedAfter = performance.now() - leftAt;
    // Freed when that lease ran out: not before, and not much after.
    expect(freedAfter).toBeGreaterThanOrEqual(leftMs - 5);
    expect(freedAfter).toBeLessThan(leftMs + 1_000);
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
  }, 15_000);

  it("a dead reader's lease runs out while another reader keeps renewing its own", async () => {
    const engine = kit.engine();
    const leaseMs = 1_000;
    const dead = WorkerProcess.start(kit, {
      kind: 'hold',
      url: redisUrl(),
      prefix: engine.settings.keyPrefix,
      key: 'k',
      mode: 'read',
      leaseMs,
      autoExtend: true,
    });
    await dead.next('held');
    const live = await engine.acquire('k', { mode: 'read', leaseMs, autoExtend: true });
    expect((await engine.inspect('k'))?.holders).toHaveLength(2);

    const writer = kit.peer(engine);
    const gotWrite = deferred<number>();
    const write = track(
      writer.acquire('k', { waitTimeoutMs: 10_000 }).then((h) => (gotWrite.resolve(performance.now()), h)),
    );
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the writer to queue');

    await dead.kill('SIGKILL');
    // Two leases later the dead reader is gone, while the live one (renewed every leaseMs/3) still holds.
    await sleep(leaseMs * 2);
    const info = await engine.inspect('k');
    expect(info?.holders.map((h) => h.pid)).toEqual([process.pid]);
    expect(live.isHeld).toBe(true);
    expect(write.settled).toBe(false);

    const releasedAt = performance.now();
    await live.release();
    const writeLock = await write.promise;
    expect((await gotWrite.promise) - releasedAt).toBeLessThan(500);
    await writeLock.release();
  }, 15_000);
});
