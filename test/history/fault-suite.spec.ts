// The history-checked fault suite, short form (the long one is `npm run soak`): worker processes use the library
// under a seeded nemesis, and the checker judges the merged history (docs/fault-suite.md). A failure prints the seed
// and the report; `HISTORY_SEED=<n>` makes the same choices again.
import { accessSync, constants } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { runHistory } from './run-history.js';
import type { RunResult } from './run-history.js';
import { newSeed } from './seeded-random.js';

const seed = Number(process.env.HISTORY_SEED ?? newSeed());
const faketimeServer = process.env.HISTORY_FAKETIME_SERVER;

/** `null` when `HISTORY_FAKETIME_SERVER` names an executable, else why the clock case is skipped. */
function faketimeSupport(): string | null {
  if (!faketimeServer) {
    return 'HISTORY_FAKETIME_SERVER is not set (a redis-server built with MALLOC=libc, which libfaketime can wrap)';
  }
  try {
    accessSync(faketimeServer, constants.X_OK);
    return null;
  } catch {
    return `HISTORY_FAKETIME_SERVER=${faketimeServer} is not an executable`;
  }
}

/** The report when the checker found violations, for the failure message; `'clean'` otherwise. */
const verdict = (r: RunResult) =>
  r.report.violations.length === 0 ? 'clean' : `${r.text}\n\nhistory kept in ${r.dir}; HISTORY_SEED=${r.seed}`;

describe('history-checked fault suite', () => {
  it('keeps the library’s word under worker, server and network faults (seeded nemesis, then a quiet phase)', async () => {
    const result = await runHistory({
      seed,
      faultMs: 30_000,
      quietMs: 8_000,
      workers: 4,
      loops: 3,
      faults: {
        'worker-kill': 1,
        'worker-pause': 1,
        'worker-close': 1,
        'redis-pause': 1,
        'redis-restart-aof': 1,
        'redis-restart-none': 1,
        'proxy-cut': 1,
      },
    });
    expect(verdict(result)).toBe('clean');
    // Not a vacuous pass: the run held, observed, wrote and injected faults of every lane.
    const ops = result.report.operations;
    expect(ops['grant:lock:write']).toBeGreaterThan(20);
    expect(ops['grant:permit:write']).toBeGreaterThan(5);
    expect(ops['grant:leader:write']).toBeGreaterThan(3);
    expect(ops['write:done:accepted']).toBeGreaterThan(10);
    expect(Object.values(result.report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(10);
  }, 240_000);

  const clockSkip = faketimeSupport();
  (clockSkip ? it.skip : it)(
    `keeps it with the server's clock 0.5 % fast and stepped back${clockSkip ? ` (skipped: ${clockSkip})` : ''}`,
    async () => {
      // Leases without renewal that run out while a poller asks every few milliseconds: a holder still said held
      // when Redis's faster clock ended its lease is seen. Restarts step the clock back 2 h each (the AOF is kept).
      const result = await runHistory({
        seed,
        faultMs: 20_000,
        quietMs: 10_000,
        workers: 4,
        loops: 3,
        serverBin: faketimeServer,
        faketime: '+0 x1.005',
        clockRate: 'x1.005',
        leases: [2_000, 3_000],
        sampleMs: 5,
        pollMs: 5_000,
        noExtendHold: [0.9, 1.4],
        mix: { exclusive: 1, 'exclusive-no-extend': 3, read: 0, poll: 3, permit: 2 },
        faults: { 'clock-step-back': 1, 'worker-pause': 1 },
        gapMs: [2_000, 4_000],
      });
      expect(verdict(result)).toBe('clean');
      expect(result.report.operations['grant:lock:write']).toBeGreaterThan(20);
    },
    240_000,
  );

  // Optional (HISTORY_SENTINEL=1): about 45 s each, on top of the minute above.
  const sentinelSkip = process.env.HISTORY_SENTINEL === '1' ? null : 'set HISTORY_SENTINEL=1 to run it';
  (sentinelSkip ? it.skip : it).each([
    ['without waitForReplicas (lost grants are the documented case)', false],
    ['with waitForReplicas', true],
  ])(
    `keeps it across Sentinel failovers %s${sentinelSkip ? ` (skipped: ${sentinelSkip})` : ''}`,
    async (_, wait) => {
      const result = await runHistory({
        seed,
        faultMs: 25_000,
        quietMs: 10_000,
        workers: 4,
        loops: 3,
        topology: 'sentinel',
        waitForReplicas: wait,
        faults: { failover: 1, 'worker-pause': 1, 'worker-kill': 0.5 },
        gapMs: [1_000, 3_000],
      });
      expect(verdict(result)).toBe('clean');
      expect(result.report.faults.failover).toBeGreaterThan(2);
    },
    240_000,
  );
});
