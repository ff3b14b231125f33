// The contended semaphore run of `bench/permits.ts`: `workers` callers on one `limit`-permit key, each holding
// ~`holdMs`
// then resting `restMs` before asking again, so that callers truly queue (20 workers on 3 permits: about two thirds
// of them wait at any moment). Measured in one process, on one monotonic clock (`performance.now()`):
//  - holders at any instant, counted in this process and in Redis (INCR when granted, DECR before releasing): both
//    counts can only be lower than the true number of holders (counted after the grant, uncounted before the
//    release), so a count above the limit is a real violation, never a false alarm;
//  - hand-off: for a grant to a caller that had to wait (all permits were taken when it asked), the time from the
//    release that freed its permit (the holder's end of hold, just before it calls release) to the grant;
//  - drain: from the start until every caller is done, against the ideal, the measured holds summed / the limit.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';

export interface PermitContender {
  readonly label: string;
  /** Takes one permit of `key` (at most `limit` holders), runs `hold` while holding it, then gives it back. */
  cycle(key: string, limit: number, hold: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export interface ContendedSettings {
  readonly workers: number;
  readonly limit: number;
  readonly cyclesPerWorker: number;
  readonly holdMs: number;
  readonly restMs: number;
}

export interface ContendedRun {
  readonly acquisitions: number;
  /** Hand-off latencies (ms) of the grants to callers that had to wait. */
  readonly handoffs: readonly number[];
  readonly drainMs: number;
  /** Sum of the measured holds (ms): a 1 ms `setTimeout` takes 1-2 ms. */
  readonly holdSumMs: number;
  /** Sum of the measured holds / limit. */
  readonly idealMs: number;
  /** Most holders seen at once, in this process / in Redis. */
  readonly maxHolders: number;
  readonly maxHoldersInRedis: number;
  /** Grants that made more than `limit` holders, in this process / in Redis. */
  readonly violations: number;
  readonly violationsInRedis: number;
  /**
   * This process's event-loop delay during the run (ms, p50 / p99): how long a ready callback (a grant) can wait its
   * turn.
   */
  readonly loopDelayMs: readonly [number, number];
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const GRANT = 0;
const RELEASE = 1;

/** One contended run; `counter` is a connection (not the contender's) for the in-Redis holder count. */
export async function contendedRun(
  c: PermitContender,
  key: string,
  counter: Redis,
  s: ContendedSettings,
): Promise<ContendedRun> {
  const counterKey = `bench-holders:${key}`;
  await counter.del(counterKey);
  // Events in the order they happened (one thread: push order is time order): kind, time, whether the grant waited.
  const kinds: number[] = [];
  const times: number[] = [];
  const waitedGrant: boolean[] = [];
  let holders = 0;
  let maxHolders = 0;
  let violations = 0;
  const inRedis: Promise<number>[] = [];
  let holdSumMs = 0;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: s.workers }, async () => {
      for (let i = 0; i < s.cyclesPerWorker; i++) {
        if (i > 0) await sleep(s.restMs);
        // Every permit taken when it asks: this caller will have to wait for a release.
        const waited = holders >= s.limit;
        await c.cycle(key, s.limit, async () => {
          const at = performance.now();
          if (++holders > s.limit) violations++;
          if (holders > maxHolders) maxHolders = holders;
          kinds.push(GRANT);
          times.push(at);
          waitedGrant.push(waited);
          // INCR needs no wait (it is sent after the grant); DECR must reach Redis before the release does.
          inRedis.push(counter.incr(counterKey));
          await sleep(s.holdMs);
          await counter.decr(counterKey);
          holders--;
          const end = performance.now();
          holdSumMs += end - at;
          kinds.push(RELEASE);
          times.push(end);
          waitedGrant.push(false);
        });
      }
    }),
  );
  const drainMs = performance.now() - start;
  loop.disable();
  const counts = await Promise.all(inRedis);
  // Permits freed and not yet taken, earliest first: a grant takes the one that has been free the longest (the
  // initial `limit` free permits were never released). For a caller that waited, that release is the hand-off's start.
  // (With more grants than permits, a violation, the queue runs dry: such grants have no hand-off.)
  const free: number[] = Array.from({ length: s.limit }, () => Number.NaN);
  let next = 0;
  const handoffs: number[] = [];
  for (let i = 0; i < kinds.length; i++) {
    if (kinds[i] === RELEASE) free.push(times[i]);
    else {
      const freedAt = next < free.length ? free[next++] : Number.NaN;
      if (waitedGrant[i] && !Number.isNaN(freedAt)) handoffs.push(times[i] - freedAt);
    }
  }
  return {
    acquisitions: s.workers * s.cyclesPerWorker,
    handoffs,
    drainMs,
    holdSumMs,
    idealMs: holdSumMs / s.limit,
    maxHolders,
    maxHoldersInRedis: Math.max(0, ...counts),
    violations,
    violationsInRedis: counts.filter((n) => n > s.limit).length,
    // The histogram holds the whole sampling interval (1 ms, about 1.1 ms on an idle loop): the delay is what exceeds
    // it.
    loopDelayMs: [Math.max(0, loop.percentile(50) / 1e6 - 1), Math.max(0, loop.percentile(99) / 1e6 - 1)],
  };
}

/** Nearest-rank percentile of `xs` (sorted here), NaN when empty. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
