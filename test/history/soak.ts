// `npm run soak -- --seconds 600 [--seed n] [--server path] [--workers n] [--faketime-server path] [--keep]
// [--sentinel [--wait-for-replicas]] [--faults a,b]`: the
// history-checked fault suite for as long as asked, then its report (faults by kind, operations by kind, violations
// by rule and fault, the seed). Exit code 1 when the checker found violations.
import { parseArgs } from 'node:util';
import { SERVER_FAULTS, WORKER_FAULTS } from './nemesis.js';
import type { FaultKind } from './nemesis.js';
import { runHistory } from './run-history.js';
import { newSeed } from './seeded-random.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '600' },
    seed: { type: 'string' },
    server: { type: 'string' },
    'faketime-server': { type: 'string' },
    workers: { type: 'string', default: '6' },
    loops: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
    faults: { type: 'string' },
    sentinel: { type: 'boolean', default: false },
    'wait-for-replicas': { type: 'boolean', default: false },
  },
});

const seed = Number(values.seed ?? process.env.HISTORY_SEED ?? newSeed());
const seconds = Number(values.seconds);
// With a server that libfaketime can wrap, the soak runs its clock 0.5 % fast and steps it back now and then.
const faketimeServer = values['faketime-server'] ?? process.env.HISTORY_FAKETIME_SERVER;
const serverBin = faketimeServer ?? values.server ?? process.env.HISTORY_SERVER;
// A Sentinel set has one server fault, the failover; a single server has the others (clock steps with a fake clock).
const sentinel = values.sentinel || values['wait-for-replicas'];
const all: FaultKind[] = [...SERVER_FAULTS, ...WORKER_FAULTS].filter((k) =>
  sentinel
    ? k !== 'proxy-cut' && !k.startsWith('redis-') && k !== 'clock-step-back'
    : k !== 'failover' && (k !== 'clock-step-back' || faketimeServer),
);
const chosen = values.faults ? (values.faults.split(',') as FaultKind[]) : all;
const weights = Object.fromEntries(chosen.map((k) => [k, k === 'clock-step-back' ? 0.3 : 1]));
const quietMs = Math.min(15_000, Math.max(8_000, seconds * 100));

console.log(
  `soak: seed ${seed}, ${seconds} s (${quietMs / 1000} s quiet at the end), server ${serverBin ?? 'redis-server from the PATH'}` +
    (sentinel ? `, Sentinel set${values['wait-for-replicas'] ? ' with waitForReplicas' : ''}` : '') +
    `${faketimeServer ? ' under libfaketime (+0 x1.005)' : ''}, faults: ${chosen.join(', ')}`,
);
const result = await runHistory({
  seed,
  faultMs: Math.max(1_000, seconds * 1000 - quietMs),
  quietMs,
  workers: Number(values.workers),
  loops: Number(values.loops),
  serverBin,
  ...(faketimeServer && !sentinel ? { faketime: '+0 x1.005', clockRate: 'x1.005' } : {}),
  ...(sentinel ? { topology: 'sentinel' as const, waitForReplicas: values['wait-for-replicas'] } : {}),
  faults: weights,
  keepHistory: values.keep,
  progress: (line) => console.log(`soak: ${line}`),
});
console.log(result.text);
console.log(
  `soak: ${result.report.violations.length} violation(s), ${result.report.excused.length} documented case(s), ` +
    `${(result.durationMs / 1000).toFixed(0)} s; seed ${seed}` +
    (result.report.violations.length || values.keep ? `; history kept in ${result.dir}` : ''),
);
process.exit(result.report.violations.length > 0 ? 1 : 0);
