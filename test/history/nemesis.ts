// The nemesis: injects faults on two lanes at once, seeded (the same seed picks the same faults, durations and
// targets; timing on a loaded machine still varies), and logs each fault's begin and end to its own history file.
// Server lane: pause redis-server, kill and restart it with or without persistence, cut every connection at the
// proxy. Worker lane: SIGKILL a worker (a new incarnation takes its slot), SIGSTOP/SIGCONT one, or have one close
// its engine while holding.
import { HistoryLog } from './history-events.js';
import type { FaultEvent } from './history-events.js';
import { SeededRandom } from './seeded-random.js';
import type { SentinelUnderTest } from './sentinel-under-test.js';
import type { ServerUnderTest } from './server-under-test.js';
import type { WorkerPool } from './worker-pool.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type ServerFault =
  'redis-pause' | 'redis-restart-aof' | 'redis-restart-none' | 'proxy-cut' | 'clock-step-back' | 'failover';
export type WorkerFault = 'worker-kill' | 'worker-pause' | 'worker-close';
export type FaultKind = ServerFault | WorkerFault;

export const SERVER_FAULTS: readonly ServerFault[] = [
  'redis-pause',
  'redis-restart-aof',
  'redis-restart-none',
  'proxy-cut',
  'clock-step-back',
  'failover',
];
export const WORKER_FAULTS: readonly WorkerFault[] = ['worker-kill', 'worker-pause', 'worker-close'];

export interface NemesisOptions {
  readonly seed: number;
  /** Relative weights of the faults to inject; a fault absent or at 0 is never injected. */
  readonly weights: Partial<Record<FaultKind, number>>;
  /** Pause between two faults of a lane, in milliseconds: [min, max]. */
  readonly gapMs: readonly [number, number];
  /** The longest lease the workers use: worker pauses run up to 2.5 times it, past their leases. */
  readonly maxLeaseMs: number;
  /** How long a worker waits for `ready` (the TypeScript loader compiles on a loaded machine). */
  readonly readyTimeoutMs: number;
  /**
   * libfaketime's rate for the server's clock (e.g. `x1.005`), with a server that can be wrapped: `clock-step-back`
   * restarts the server (keeping its AOF) with its clock set 2 hours further back each time, at that rate.
   */
  readonly clockRate?: string;
}

export class Nemesis {
  private readonly log: HistoryLog;
  private readonly random: SeededRandom;
  private running = false;
  /** The nemesis's own failover is under way (a promotion then is its own). */
  private failingOver = false;
  /** The server clock's offset, in hours (`clock-step-back` lowers it). */
  private clockOffsetHours = 0;
  private lanes: Promise<void>[] = [];
  /** Faults injected, by kind. */
  readonly counts: Partial<Record<FaultKind, number>> = {};
  /** Faults that failed to be injected or healed, with the reason (a harness problem, reported, not a violation). */
  readonly errors: string[] = [];

  constructor(
    historyFile: string,
    /** The Redis under test: one server (all server faults but `failover`), or a Sentinel set (`failover`). */
    private readonly target: {
      readonly server?: ServerUnderTest;
      readonly sentinel?: SentinelUnderTest;
      /** The workers' engines use `waitForReplicas`: a failover then loses no grant they were told of. */
      readonly waitForReplicas?: boolean;
    },
    private readonly pool: WorkerPool,
    private readonly options: NemesisOptions,
  ) {
    this.log = new HistoryLog(historyFile, 'nemesis');
    this.random = new SeededRandom(options.seed);
  }

  start(): void {
    this.running = true;
    // Every promotion is logged; one the nemesis did not ask for is a fault of its own (and, without
    // waitForReplicas, a data loss as much as the nemesis's own failovers).
    const sentinel = this.target.sentinel;
    if (sentinel) {
      sentinel.onSwitch = (from, to) => {
        if (this.failingOver) return;
        const lost = this.target.waitForReplicas ? undefined : 'failover-without-waitForReplicas';
        this.note('sentinel-switch', 'begin', `the sentinels promoted ${to} over ${from} on their own`, lost);
        this.note('sentinel-switch', 'end');
      };
    }
    const serverWeights = pickWeights(this.options.weights, SERVER_FAULTS);
    const workerWeights = pickWeights(this.options.weights, WORKER_FAULTS);
    const serverRandom = new SeededRandom(this.random.fork());
    const workerRandom = new SeededRandom(this.random.fork());
    if (serverWeights) this.lanes.push(this.lane(serverRandom, serverWeights));
    if (workerWeights) this.lanes.push(this.lane(workerRandom, workerWeights));
  }

  /** Stops injecting, heals what is broken (resumes, heals, relaunches dead workers), and resolves once healed. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
    const server = this.target.server;
    if (server?.paused) server.resume();
    server?.proxy.heal();
    for (let slot = 0; slot < this.pool.size; slot++) {
      const w = this.pool.worker(slot);
      w.signal('SIGCONT');
      if (!w.alive || w.stopped) await this.relaunch(slot);
    }
    this.log.close();
  }

  private async lane(random: SeededRandom, weights: Partial<Record<FaultKind, number>>): Promise<void> {
    while (this.running) {
      await sleep(random.int(...this.options.gapMs));
      if (!this.running) return;
      const kind = random.weighted(weights as Record<FaultKind, number>);
      this.counts[kind] = (this.counts[kind] ?? 0) + 1;
      try {
        await this.inject(kind, random);
      } catch (err) {
        this.errors.push(`${kind}: ${(err as Error).message}`);
        this.note(kind, 'end', `failed: ${(err as Error).message}`);
      }
    }
  }

  private note(
    kind: FaultKind | 'sentinel-switch',
    phase: FaultEvent['phase'],
    detail?: string,
    dataLoss?: FaultEvent['dataLoss'],
  ): void {
    this.log.log({ e: 'fault', kind, phase, ...(detail ? { detail } : {}), ...(dataLoss ? { dataLoss } : {}) });
  }

  private async inject(kind: FaultKind, random: SeededRandom): Promise<void> {
    if (kind === 'failover') return this.failover(random);
    if (!this.target.server && (SERVER_FAULTS as readonly string[]).includes(kind))
      throw new Error(`${kind} needs a single server`);
    const server = this.target.server as ServerUnderTest;
    switch (kind) {
      case 'redis-pause': {
        const ms = random.int(200, 2_500);
        this.note(kind, 'begin', `${ms} ms`);
        server.pause();
        await sleep(ms);
        server.resume();
        this.note(kind, 'end');
        return;
      }
      case 'redis-restart-aof':
      case 'redis-restart-none': {
        const persistence = kind === 'redis-restart-aof' ? 'aof' : 'none';
        const from = server.currentPersistence;
        const losing = from === 'none' || persistence === 'none';
        // Logged before the kill: the data set is lost from this moment when either server has no persistence.
        this.note(kind, 'begin', `${from} -> ${persistence}`, losing ? 'restart-without-persistence' : undefined);
        const lost = await server.restart(persistence);
        this.note(kind, 'end', lost ? 'data set lost' : 'data set kept');
        return;
      }
      case 'clock-step-back': {
        if (this.options.clockRate === undefined)
          throw new Error('clock-step-back needs a server built without jemalloc');
        const from = server.currentPersistence;
        this.clockOffsetHours -= 2;
        const faketime = `${this.clockOffsetHours}h ${this.options.clockRate}`;
        const losing = from === 'none';
        this.note(kind, 'begin', `FAKETIME="${faketime}"`, losing ? 'restart-without-persistence' : undefined);
        await server.restart('aof', faketime);
        this.note(kind, 'end');
        return;
      }
      case 'proxy-cut': {
        const ms = random.int(100, 1_500);
        this.note(kind, 'begin', `${ms} ms`);
        server.proxy.cut({ refuse: true });
        await sleep(ms);
        server.proxy.heal();
        this.note(kind, 'end');
        return;
      }
      case 'worker-kill': {
        const slot = random.int(0, this.pool.size - 1);
        const w = this.pool.worker(slot);
        this.note(kind, 'begin', w.task.name);
        await w.kill();
        this.note(kind, 'end', w.task.name);
        await sleep(random.int(100, 1_000));
        await this.relaunch(slot);
        return;
      }
      case 'worker-pause': {
        const slot = random.int(0, this.pool.size - 1);
        const w = this.pool.worker(slot);
        const ms = random.int(100, Math.round(this.options.maxLeaseMs * 2.5));
        this.note(kind, 'begin', `${w.task.name} ${ms} ms`);
        w.signal('SIGSTOP');
        await sleep(ms);
        w.signal('SIGCONT');
        this.note(kind, 'end', w.task.name);
        return;
      }
      case 'worker-close': {
        const slot = random.int(0, this.pool.size - 1);
        const w = this.pool.worker(slot);
        this.note(kind, 'begin', w.task.name);
        w.stopped = true;
        w.send({ type: 'close-engine', observeMs: 1_500 });
        const closed = await w.next('closed', 10_000).catch(() => undefined);
        await Promise.race([w.exited, sleep(4_000)]);
        await w.kill();
        this.note(
          kind,
          'end',
          `${w.task.name}: ${closed ? `${closed.holdsAtClose} holds at close` : 'no close reply'}`,
        );
        await this.relaunch(slot);
        return;
      }
    }
  }

  /** Replication held back, master killed with grants the replica never got, replica promoted. */
  private async failover(random: SeededRandom): Promise<void> {
    const sentinel = this.target.sentinel;
    if (!sentinel) throw new Error('failover needs a Sentinel set');
    const holdMs = random.int(600, 1_200);
    const lost = this.target.waitForReplicas ? undefined : 'failover-without-waitForReplicas';
    // Without waitForReplicas the writes of the hold-back are lost (the docs' case); with it, the replica is stopped
    // instead, so that WAIT reports honestly what it has (see SentinelUnderTest.failover).
    const holdBack = this.target.waitForReplicas ? 'sigstop' : 'client-pause';
    this.failingOver = true;
    let master: number;
    try {
      master = await sentinel.failover(holdBack, holdMs, random.int(200, holdMs - 300), () =>
        this.note('failover', 'begin', `replication held back ${holdMs} ms, master killed`, lost),
      );
    } finally {
      this.failingOver = false;
    }
    this.note('failover', 'end', `new master on port ${master}`);
  }

  private async relaunch(slot: number): Promise<void> {
    try {
      await this.pool.launch(slot, this.options.readyTimeoutMs);
    } catch (err) {
      this.errors.push(`relaunch of worker ${slot}: ${(err as Error).message}`);
    }
  }
}

function pickWeights<K extends FaultKind>(
  weights: Partial<Record<FaultKind, number>>,
  kinds: readonly K[],
): Partial<Record<FaultKind, number>> | null {
  const picked = Object.fromEntries(kinds.filter((k) => (weights[k] ?? 0) > 0).map((k) => [k, weights[k]]));
  return Object.keys(picked).length > 0 ? picked : null;
}
