import { Redis } from 'ioredis';
import type { BenchConfig } from '../config.js';
import { LockEngine } from '../../lib/index.js';
import type { LockHandle } from '../../lib/index.js';
import type { Log } from '../support/log.js';
import type { RedisStats } from '../support/redis-stats.js';
import { collectGarbage, sleep } from '../support/samples.js';

/** Default lease of the library, in milliseconds. */
const DEFAULT_LEASE_MS = 30_000;
/** Acquisitions in flight while taking the locks. */
const ACQUIRE_CONCURRENCY = 500;

/** One process holding many locks for a while, then releasing them all at once. */
export interface ScaleStep {
  readonly locks: number;
  readonly leaseMs: number;
  /** How long every lock was held after the last was acquired, in milliseconds. */
  readonly heldMs: number;
  /** Time to acquire them all, in seconds. */
  readonly acquireS: number;
  /** `lost` events while held (must be 0). */
  readonly lostWhileHeld: number;
  /** Time to release them all concurrently, in seconds. */
  readonly releaseS: number;
  /** `release()` calls that resolved `false` (the lock was gone before its release reached Redis; must be 0). */
  readonly releasedFalse: number;
  /** `lost` events during the release (must be 0). */
  readonly lostOnRelease: number;
  /** Lock keys left in Redis after the release (must be 0). */
  readonly leftInRedis: number;
  /** Warnings the engine logged: renewal falling behind, renewal failures, lost-lock lines. */
  readonly warnings: {
    readonly behind: number;
    readonly renewalFailed: number;
    readonly lost: number;
    readonly other: number;
  };
  /** Node CPU over the hold, % of one core. */
  readonly nodeCpuPct: number;
  /** redis-server CPU over the hold, % of one core. */
  readonly redisCpuPct: number;
  /** Resident memory of the bench process at the end of the hold, in MB. */
  readonly rssMb: number;
}

export interface ScaleResult {
  /** The target: 100,000 locks held for 60 s at a 3 s lease. */
  readonly shortLease: ScaleStep;
  /** Growing counts at the default lease, until one loses a lock or the largest planned count. */
  readonly defaultLease: readonly ScaleStep[];
  /** The largest count held at the default lease with nothing lost. */
  readonly largestAtDefault: number;
}

async function acquireAll(engine: LockEngine, prefix: string, locks: number): Promise<LockHandle[]> {
  const handles: LockHandle[] = new Array<LockHandle>(locks);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < locks; i = next++) handles[i] = await engine.acquire(`${prefix}${i}`);
  };
  await Promise.all(Array.from({ length: ACQUIRE_CONCURRENCY }, worker));
  return handles;
}

async function countKeys(client: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let n = 0;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 10_000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}

/** Holds `locks` locks at `leaseMs` for `holdMs`, then releases them all at once. */
export async function holdMany(
  url: string,
  stats: RedisStats,
  locks: number,
  leaseMs: number,
  holdMs: number,
  log: Log,
): Promise<ScaleStep> {
  const keyPrefix = `bench:scale:${leaseMs}:${locks}:`;
  const warnings = { behind: 0, renewalFailed: 0, lost: 0, other: 0 };
  const logger = {
    warn: (m: string) => {
      if (m.includes('falling behind')) warnings.behind++;
      else if (m.includes('renewal of')) warnings.renewalFailed++;
      else if (m.startsWith('lost')) warnings.lost++;
      else {
        warnings.other++;
        if (warnings.other <= 3) log(`scale: engine warning: ${m}`);
      }
    },
    error: () => warnings.other++,
  };
  const engine = new LockEngine({ redis: url, keyPrefix, leaseMs, logger, holdWarningMs: 0, waitWarningMs: 0 });
  const admin = new Redis(url);
  let lost = 0;
  engine.on('lost', () => lost++);
  try {
    const t0 = performance.now();
    const handles = await acquireAll(engine, 'k', locks);
    const acquireS = (performance.now() - t0) / 1000;
    log(
      `scale: ${locks} locks at lease ${leaseMs} ms acquired in ${acquireS.toFixed(1)} s; holding ${holdMs / 1000} s`,
    );
    collectGarbage();
    const redis0 = await stats.cpuSeconds();
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    await sleep(holdMs);
    const heldMs = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    const redisCpu = (await stats.cpuSeconds()) - redis0;
    const lostWhileHeld = lost;
    const rssMb = process.memoryUsage().rss / 1e6;
    const r0 = performance.now();
    let firstError: unknown;
    const results = await Promise.all(
      handles.map((h) =>
        h.release().catch((err: unknown) => {
          firstError ??= err;
          return false;
        }),
      ),
    );
    if (firstError !== undefined) log(`scale: first release error: ${String(firstError)}`);
    const releaseS = (performance.now() - r0) / 1000;
    const releasedFalse = results.filter((ok) => !ok).length;
    const lostOnRelease = lost - lostWhileHeld;
    const leftInRedis = await countKeys(admin, keyPrefix);
    const step: ScaleStep = {
      locks,
      leaseMs,
      heldMs,
      acquireS,
      lostWhileHeld,
      releaseS,
      releasedFalse,
      lostOnRelease,
      leftInRedis,
      warnings,
      nodeCpuPct: ((cpu.user + cpu.system) / 1000 / heldMs) * 100,
      redisCpuPct: ((redisCpu * 1000) / heldMs) * 100,
      rssMb,
    };
    log(
      `scale: ${locks} locks, lease ${leaseMs} ms: lost ${lostWhileHeld} while held, ${releasedFalse} release() false, ` +
        `${lostOnRelease} lost on release, ${leftInRedis} keys left; warnings ${JSON.stringify(warnings)}; ` +
        `node ${step.nodeCpuPct.toFixed(0)} %, redis ${step.redisCpuPct.toFixed(0)} %, rss ${rssMb.toFixed(0)} MB`,
    );
    return step;
  } finally {
    await engine.close();
    admin.disconnect();
    await stats.flush();
  }
}

/** Scenario: one process holding 100,000 locks at a 3 s lease for a minute, and the most it holds at the default. */
export async function runScale(config: BenchConfig, url: string, stats: RedisStats, log: Log): Promise<ScaleResult> {
  const { shortLocks, shortLeaseMs, shortHoldMs, defaultCounts, defaultHoldMs } = config.scale;
  const shortLease = await holdMany(url, stats, shortLocks, shortLeaseMs, shortHoldMs, log);
  const defaultLease: ScaleStep[] = [];
  let largestAtDefault = 0;
  for (const locks of defaultCounts) {
    const step = await holdMany(url, stats, locks, DEFAULT_LEASE_MS, defaultHoldMs, log);
    defaultLease.push(step);
    if (step.lostWhileHeld > 0 || step.releasedFalse > 0 || step.lostOnRelease > 0) break;
    largestAtDefault = locks;
  }
  return { shortLease, defaultLease, largestAtDefault };
}
