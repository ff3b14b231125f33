// One history-checked run: a redis-server (behind the proxy), worker processes, the nemesis for a while, then a
// quiet phase without faults, then the checker over the merged history. Shared by the spec and the soak.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { checkHistory, formatReport } from './checker.js';
import type { CheckReport } from './checker.js';
import { HistoryLog, readHistory } from './history-events.js';
import type { HistoryEvent } from './history-events.js';
import { Nemesis } from './nemesis.js';
import type { FaultKind } from './nemesis.js';
import { SeededRandom } from './seeded-random.js';
import { SentinelUnderTest } from './sentinel-under-test.js';
import { ServerUnderTest } from './server-under-test.js';
import type { Persistence } from './server-under-test.js';
import { WorkerPool } from './worker-pool.js';
import { storeKeys } from './worker-operations.js';
import type { OperationKind, WorkerTask } from './worker-task.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface RunOptions {
  readonly seed: number;
  /** How long the nemesis injects faults, in milliseconds. */
  readonly faultMs: number;
  /** The quiet phase after it (no faults; every key must be granted again), in milliseconds. */
  readonly quietMs: number;
  readonly workers: number;
  /** Operation loops per worker. */
  readonly loops: number;
  /** The redis-server binary (default: REDIS_SERVER_BIN or the PATH's). */
  readonly serverBin?: string;
  /**
   * `sentinel`: a Sentinel set (master, replica, 3 sentinels; fault `failover`) instead of one server behind the
   * proxy; `waitForReplicas` then makes every engine wait for the replica's acknowledgement.
   */
  readonly topology?: 'single' | 'sentinel';
  readonly waitForReplicas?: boolean;
  /** The server's persistence at start (`aof` by default). */
  readonly persistence?: Persistence;
  /** libfaketime's `FAKETIME` for the server (a binary built without jemalloc), e.g. `+0 x1.005`. */
  readonly faketime?: string;
  /** The rate part for `clock-step-back` restarts (e.g. `x1.005`). */
  readonly clockRate?: string;
  readonly faults: Partial<Record<FaultKind, number>>;
  readonly gapMs?: readonly [number, number];
  readonly leases?: readonly number[];
  readonly mix?: Readonly<Record<OperationKind, number>>;
  readonly sampleMs?: number;
  /** How long locks without `autoExtend` are held, as fractions of their lease (default [0, 1.3]). */
  readonly noExtendHold?: readonly [number, number];
  /** How long a `poll` operation keeps trying, in milliseconds (default 1500). */
  readonly pollMs?: number;
  /** Keep the history files (they are kept anyway when the run has violations). */
  readonly keepHistory?: boolean;
  /** Progress lines (default: none). */
  readonly progress?: (line: string) => void;
}

export interface RunResult {
  readonly seed: number;
  readonly report: CheckReport;
  readonly events: readonly HistoryEvent[];
  /** The readable report (seed, faults, operations, violations with their events). */
  readonly text: string;
  /** Where the history files are (removed after a clean run unless `keepHistory`). */
  readonly dir: string;
  /** Faults the nemesis could not inject or heal (a harness problem, not a finding). */
  readonly harnessErrors: readonly string[];
  readonly durationMs: number;
}

export const DEFAULT_MIX: Readonly<Record<OperationKind, number>> = {
  exclusive: 3,
  'exclusive-no-extend': 3,
  read: 2,
  poll: 2,
  permit: 2,
};

const LOCK_KEYS = ['k0', 'k1'];
const PERMIT_KEYS = ['p0'];
const LEADER_NAMES = ['l0'];

export async function runHistory(options: RunOptions): Promise<RunResult> {
  const started = Date.now();
  const say = options.progress ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-history-run-'));
  const harness = new HistoryLog(join(dir, 'harness.jsonl'), 'harness');
  const random = new SeededRandom(options.seed);
  const leases = options.leases ?? [300, 600, 1_000, 1_500];
  const prefix = `history:${options.seed}:`;
  const sentinel = options.topology === 'sentinel' ? await SentinelUnderTest.start(options.serverBin) : undefined;
  await sentinel?.watch();
  const server = sentinel
    ? undefined
    : await ServerUnderTest.start({
        bin: options.serverBin,
        persistence: options.persistence ?? 'aof',
        faketime: options.faketime,
      });
  const workerSeeds = Array.from({ length: options.workers }, () => random.fork());
  const pool = new WorkerPool(dir, (slot, name, historyFile): WorkerTask => ({
    name,
    historyFile,
    redis: server?.proxiedUrl ?? (sentinel as SentinelUnderTest).target,
    store: server?.url ?? (sentinel as SentinelUnderTest).target,
    prefix,
    // A new incarnation of a slot makes other choices than the one before it.
    seed: (workerSeeds[slot] + Number(name.split('.')[1]) * 7919) >>> 0,
    lockKeys: LOCK_KEYS,
    permitKeys: PERMIT_KEYS,
    permitLimit: 2,
    leaderNames: LEADER_NAMES,
    leaderLeaseMs: 1_000,
    leases,
    loops: options.loops,
    sampleMs: options.sampleMs ?? 20,
    pollMs: options.pollMs ?? 1_500,
    noExtendHold: options.noExtendHold ?? [0, 1.3],
    mix: options.mix ?? DEFAULT_MIX,
  }));
  const nemesis = new Nemesis(
    join(dir, 'nemesis.jsonl'),
    { server, sentinel, waitForReplicas: options.waitForReplicas },
    pool,
    {
      seed: random.fork(),
      weights: options.faults,
      gapMs: options.gapMs ?? [300, 1_500],
      maxLeaseMs: Math.max(...leases),
      readyTimeoutMs: 60_000,
      clockRate: options.clockRate,
    },
  );
  let result: RunResult | undefined;
  try {
    harness.log({ e: 'phase', phase: 'start', seed: options.seed });
    await pool.start(options.workers, 60_000);
    say(`${options.workers} workers ready; faults for ${options.faultMs} ms`);
    nemesis.start();
    await sleep(options.faultMs);
    await nemesis.stop();
    harness.log({ e: 'phase', phase: 'quiet' });
    say(`faults stopped; quiet for ${options.quietMs} ms`);
    await sleep(options.quietMs);
    harness.log({ e: 'phase', phase: 'end' });
    await pool.stopAll(8_000);
    await readStore(
      server?.url ?? `redis://127.0.0.1:${await (sentinel as SentinelUnderTest).master()}`,
      prefix,
      harness,
    );
    harness.close();
    const events = readHistory(dir);
    const report = checkHistory(events, {
      expectedKeys: [
        ...LOCK_KEYS.map((k) => `lock:${k}`),
        ...PERMIT_KEYS.map((k) => `permit:${k}`),
        ...LEADER_NAMES.map((k) => `leader:${k}`),
      ],
      settleMs: Math.min(4_000, options.quietMs / 2),
    });
    const text = formatReport(report, events, options.seed);
    result = {
      seed: options.seed,
      report,
      events,
      text: nemesis.errors.length ? `${text}\nharness errors:\n  ${nemesis.errors.join('\n  ')}` : text,
      dir,
      harnessErrors: nemesis.errors,
      durationMs: Date.now() - started,
    };
    return result;
  } finally {
    await pool.killAll();
    await server?.stop();
    await sentinel?.stop();
    if (result && result.report.violations.length === 0 && !options.keepHistory)
      rmSync(dir, { recursive: true, force: true });
  }
}

/** Reads the fenced store's list of every key into the history (`store` events). */
async function readStore(url: string, prefix: string, harness: HistoryLog): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 3 });
  try {
    for (const key of [...LOCK_KEYS, ...LEADER_NAMES.map((n) => `leader:${n}`)]) {
      const [, list] = storeKeys(prefix, key);
      const entries = (await client.lrange(list, 0, -1)).map((raw) => {
        const [id, fence, token] = raw.split('|');
        return { id, fence: Number(fence), token };
      });
      harness.log({ e: 'store', key, entries });
    }
  } finally {
    client.disconnect();
  }
}
