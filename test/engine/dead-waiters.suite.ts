import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import { CLAIM_MS, WAITER_HEARTBEAT_MS, WAITER_LEASE_MS } from '../../lib/store/waiter-timing.js';
import type { LockHandle, LockMode } from '../../lib/types/lock.types.js';
import type { WorkerRedis } from '../fixtures/worker-protocol.js';
import { LockTestKit, sleep, track, uniquePrefix, until } from '../support/lock-test-kit.js';
import { WorkerProcess } from '../support/worker-process.js';

/*
 * The dead-waiter suite, shared by dead-waiters.spec.ts (one Redis), dead-waiters-cluster.spec.ts and
 * dead-waiters-quorum.spec.ts (three files, so Jest's workers share the load). Liveness of waiting: a waiter that registered and then died (SIGKILL) or froze (SIGSTOP) must not capture the
 * wake-ups. A holds the lock, a waiter W in another process registers and is killed or paused, B starts waiting,
 * A releases: B gets the lock within a second, with default options (30 s leases), on every topology.
 */

/** The most a hand-over after a dead or frozen waiter may take, in milliseconds (default options). */
const HANDOVER_MS = 1_000;
/**
 * After a chain of dead waiters: each one named in turn costs a claim window and a heartbeat, and all of them are gone
 * once their liveness leases ran out: at most a lease, a claim window and a heartbeat after they died.
 */
const CHAIN_HANDOVER_MS = WAITER_LEASE_MS + CLAIM_MS + WAITER_HEARTBEAT_MS;

type Fate = 'killed' | 'paused';

/** One topology: engines in this process, the connection a worker process uses, and where leftovers are looked for. */
export interface World {
  readonly name: string;
  engine(prefix: string, options?: Partial<LockEngineOptions>): LockEngine;
  readonly workerRedis: WorkerRedis;
  keysLeft(prefix: string): Promise<string[]>;
}

export const kit = new LockTestKit();
afterEach(() => kit.closeAll());

/** A worker process waiting for `key`, once its waiter is registered. */
async function registeredWaiter(
  world: World,
  prefix: string,
  key: string,
  mode: LockMode,
  fair: boolean,
): Promise<WorkerProcess> {
  const worker = WorkerProcess.start(kit, {
    kind: 'wait',
    redis: world.workerRedis,
    prefix,
    key,
    mode,
    fair,
    waitTimeoutMs: 60_000,
  });
  await worker.next('waiting', 15_000);
  return worker;
}

/** Starts `engine` waiting for `key` and resolves once its first attempt was refused (it is registered). */
async function waitingIn(engine: LockEngine, key: string, mode: LockMode, fair: boolean) {
  let contended = false;
  const off = engine.on('contended', () => (contended = true));
  const acquisition = track(engine.acquire(key, { mode, fair }));
  await until(() => contended, 5_000, 'B registered as a waiter');
  off();
  return acquisition;
}

/** After the trial: the dead waiters' registrations run out by themselves, and nothing is left in Redis. */
async function nothingLeft(world: World, prefix: string): Promise<void> {
  await until(async () => (await world.keysLeft(prefix)).length === 0, 5_000, 'the lock keys to be gone');
}

/**
 * The scenario of the table: `dead` waiters in other processes register and are then killed or paused; B (another
 * engine) waits; 300 ms later A releases. Returns how long B waited after the release, in milliseconds.
 */
async function handover(world: World, fate: Fate, fair: boolean, mode: LockMode, dead = 1): Promise<number> {
  const prefix = uniquePrefix('dead-waiter');
  const a = world.engine(prefix);
  const b = world.engine(prefix);
  const held = await a.acquire('x');
  const waiters: WorkerProcess[] = [];
  for (let i = 0; i < dead; i++) waiters.push(await registeredWaiter(world, prefix, 'x', mode, fair));
  for (const w of waiters) {
    if (fate === 'killed') await w.kill('SIGKILL');
    else process.kill(w.pid, 'SIGSTOP');
  }
  const acquisition = waitingIn(b, 'x', mode, fair);
  const bWaits = await acquisition;
  await sleep(300);
  const releasedAt = performance.now();
  await held.release();
  const lock = await bWaits.promise;
  const waited = (bWaits.at as number) - releasedAt;
  await lock.release();
  // A paused process is killed as it is (SIGKILL works on a stopped process): it never resumes in this scenario.
  for (const w of waiters) await w.kill('SIGKILL');
  await nothingLeft(world, prefix);
  return waited;
}

export function liveness(world: () => World, trials: number): void {
  describe.each([
    ['killed', false],
    ['paused', false],
    ['killed', true],
    ['paused', true],
  ] as [Fate, boolean][])('a %s waiter ahead (fair: %s)', (fate, fair) => {
    it(`does not hold up the next waiter: ${trials} hand-overs, each under ${HANDOVER_MS} ms after the release`, async () => {
      const waited: number[] = [];
      for (let i = 0; i < trials; i++) waited.push(await handover(world(), fate, fair, 'write'));
      expect(waited.filter((ms) => ms >= HANDOVER_MS)).toEqual([]);
    }, 60_000);
  });

  it(`a chain of three dead waiters ahead of a live one, fair and not, readers and writers: each hand-over under ${CHAIN_HANDOVER_MS} ms`, async () => {
    const waited = [
      await handover(world(), 'killed', true, 'write', 3),
      await handover(world(), 'killed', false, 'write', 3),
      await handover(world(), 'paused', true, 'read', 3),
    ];
    expect(waited.filter((ms) => ms >= CHAIN_HANDOVER_MS)).toEqual([]);
  }, 60_000);

  it.each([false, true])(
    'a waiter killed while it is being woken (fair: %s) does not hold up the next',
    async (fair) => {
      const w = world();
      const prefix = uniquePrefix('dead-waiter');
      const a = w.engine(prefix);
      const b = w.engine(prefix);
      const held = await a.acquire('x');
      const waiter = await registeredWaiter(w, prefix, 'x', 'write', fair);
      const bWaits = await waitingIn(b, 'x', 'write', fair);
      // The wake-up goes out to the first waiter as it dies: stopped first, so that it cannot take the lock before
      // (a waiter that got the lock and died is a dead holder, whose lease keeps the lock).
      process.kill(waiter.pid, 'SIGSTOP');
      const releasedAt = performance.now();
      await held.release();
      await waiter.kill('SIGKILL');
      const lock = await bWaits.promise;
      expect((bWaits.at as number) - releasedAt).toBeLessThan(HANDOVER_MS);
      await lock.release();
      await nothingLeft(w, prefix);
    },
    30_000,
  );

  it.each([false, true])(
    'a frozen waiter that resumes finds its turn gone, waits again and gets the lock after (fair: %s)',
    async (fair) => {
      const w = world();
      const prefix = uniquePrefix('dead-waiter');
      const a = w.engine(prefix);
      const b = w.engine(prefix);
      const held = await a.acquire('x');
      const waiter = await registeredWaiter(w, prefix, 'x', 'write', fair);
      process.kill(waiter.pid, 'SIGSTOP');
      const bWaits = await waitingIn(b, 'x', 'write', fair);
      await sleep(300);
      const releasedAt = performance.now();
      await held.release();
      const lock: LockHandle = await bWaits.promise;
      expect((bWaits.at as number) - releasedAt).toBeLessThan(HANDOVER_MS);
      // The frozen waiter resumes while B holds the lock: it must not get it too.
      process.kill(waiter.pid, 'SIGCONT');
      await sleep(700);
      const info = await b.inspect('x');
      expect(info?.holders).toHaveLength(1);
      expect(info?.holders[0].pid).toBe(process.pid);
      await lock.release();
      // Then it gets the lock in turn (it waits again; it does not time out or fail).
      const got = await waiter.next('held', 5_000);
      expect(got.fencingToken).toBeGreaterThan(lock.fencingToken);
      waiter.send({ type: 'release' });
      await waiter.next('released', 5_000);
      await waiter.exited;
      await nothingLeft(w, prefix);
    },
    30_000,
  );
}
