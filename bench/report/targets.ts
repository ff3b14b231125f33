import type { BenchResults, TargetResult } from '../results.js';
import { fmt } from './format.js';
import { medianRatio } from '../scenarios/uncontended.scenario.js';

const LIBRARY = ['engine', 'service'] as const;
const NAMES: Record<string, string> = { engine: 'LockEngine', service: 'LockService' };

/** At least `goal`: attainment = measured / goal. */
function atLeast(scenario: string, target: string, value: number, goal: number, measured: string): TargetResult {
  return { scenario, target, measured, pass: value >= goal, attainment: value / goal };
}

/** At most `goal`: attainment = goal / measured. */
function atMost(scenario: string, target: string, value: number, goal: number, measured: string): TargetResult {
  return { scenario, target, measured, pass: value <= goal, attainment: goal / value };
}

/** Every target of the issue, pass or miss, for this library's engine and its Nest service. */
export function evaluateTargets(r: BenchResults): TargetResult[] {
  const out: TargetResult[] = [];
  for (const { workers, rows } of r.uncontended?.byWorkers ?? []) {
    const peers = rows.filter((x) => r.contenders.find((c) => c.id === x.id)?.kind === 'peer');
    const best = peers.reduce((a, b) => (b.cyclesPerSec > a.cyclesPerSec ? b : a), peers[0]);
    for (const id of LIBRARY) {
      const row = rows.find((x) => x.id === id);
      if (!row) continue;
      out.push(
        atLeast(
          '1 uncontended',
          `${NAMES[id]}, ${workers} worker(s): ≥ 0.9× bare`,
          row.ratioToBare,
          0.9,
          `${fmt.ratio(row.ratioToBare)} bare`,
        ),
      );
      if (best) {
        const vsBest = medianRatio(row, best);
        out.push(
          atLeast(
            '1 uncontended',
            `${NAMES[id]}, ${workers} worker(s): ahead of every peer`,
            vsBest,
            1,
            `${fmt.ratio(vsBest)} best peer (${best.id})`,
          ),
        );
      }
    }
  }
  for (const id of LIBRARY) {
    const row = r.handoff?.rows.find((x) => x.id === id);
    if (!row) continue;
    out.push(
      atMost(
        '2 handoff',
        `${NAMES[id]}: handoff p50 ≤ 0.5 ms`,
        row.handoffP50Ms,
        0.5,
        `${fmt.ms(row.handoffP50Ms)} ms`,
      ),
    );
    out.push(
      atMost('2 handoff', `${NAMES[id]}: handoff p99 ≤ 2 ms`, row.handoffP99Ms, 2, `${fmt.ms(row.handoffP99Ms)} ms`),
    );
    out.push(
      atMost(
        '2 handoff',
        `${NAMES[id]}: drain ≤ 1.5× sum of holds`,
        row.drainToHolds,
        1.5,
        `${fmt.ratio(row.drainToHolds)} (${fmt.ms(row.drainMs)} ms for ${fmt.ms(row.holdSumMs)} ms held)`,
      ),
    );
  }
  for (const id of LIBRARY) {
    const row = r.commands?.rows.find((x) => x.id === id);
    if (!row) continue;
    const c = row.contended;
    out.push(
      atMost(
        '3 commands',
        `${NAMES[id]}: ≤ 4 Redis commands per contended acquisition (INFO commandstats)`,
        c.total,
        4,
        `${fmt.num(c.total)}`,
      ),
    );
    out.push(
      atMost(
        '3 commands',
        `${NAMES[id]}: same, counting only commands sent over the wire`,
        c.wire,
        4,
        `${fmt.num(c.wire)}`,
      ),
    );
  }
  if (r.readWrite) {
    const v = r.readWrite.readersToDistinct;
    out.push(
      atLeast('4 read/write', '50 readers on one key ≥ 0.8× 50 workers on distinct keys', v, 0.8, `${fmt.ratio(v)}`),
    );
  }
  if (r.watchdog) {
    const w = r.watchdog;
    out.push(
      atLeast(
        '5 watchdog',
        'one round trip renews ≥ 100 locks',
        w.short.locksPerRoundTrip,
        100,
        `${fmt.int(w.short.locksPerRoundTrip)} locks per round trip`,
      ),
    );
    const cpu = w.atDefault?.renewalCpuPct ?? w.scaledDefaultCpuPct;
    const how = w.atDefault ? 'measured at 30 s lease' : `scaled from ${w.short.leaseMs} ms lease`;
    const whole = w.atDefault ? `; whole process ${fmt.num(w.atDefault.nodeCpuPct)} %` : '';
    out.push(
      atMost(
        '5 watchdog',
        'renewal CPU < 5% of a core, 10,000 locks, 30 s lease',
        cpu,
        5,
        `${fmt.num(cpu)} % (${how}${whole})`,
      ),
    );
  }
  if (r.http) {
    const v = r.http.lockedToUnlocked;
    const same = r.http.lockedToUnlockedSameState;
    out.push(
      atLeast(
        '6 HTTP',
        'PUT with @WriteLocked ≥ 0.8× requests/s without',
        v,
        0.8,
        `${fmt.ratio(v)} (${fmt.ratio(same)} vs unlocked after locks were taken)`,
      ),
    );
  }
  return out;
}
