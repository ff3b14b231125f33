import type { BenchResults } from '../results.js';
import type { CommandCounts } from '../support/redis-stats.js';
import { describeMachine } from '../support/machine.js';
import { fmt, table } from './format.js';

function breakdown(c: CommandCounts, max = 6): string {
  const entries = Object.entries(c).filter(([, v]) => v >= 0.01);
  const shown = entries.slice(0, max).map(([k, v]) => `${k} ${fmt.num(v)}`);
  return entries.length > max ? `${shown.join(', ')}, …` : shown.join(', ');
}

/** Every result table of a run, as markdown: printed by `npm run bench` and copied into bench/README.md. */
export function renderTables(r: BenchResults): string {
  const out: string[] = [];
  out.push(
    `Run of ${r.date} (${r.mode} mode, ${r.config.reps} repetition(s), contender order reversed on every other one)`,
  );
  out.push(
    `Machine: ${describeMachine(r.machine)}; load average ${r.machine.loadAtStart} at start, ${r.machine.loadAtEnd ?? '?'} at end. ` +
      `Library at commit ${r.library}; run took ${r.durationS ?? '?'} s.`,
  );

  for (const { workers, rows } of r.uncontended?.byWorkers ?? []) {
    out.push(
      `### 1. Uncontended, ${workers} worker(s) on distinct keys (${r.config.uncontended.rounds} rounds of ${r.config.uncontended.sliceMs / 1000} s slices, contenders interleaved; medians, × bare = median of the per-round ratios)`,
    );
    out.push(
      table(
        [
          'contender',
          'cycles/s',
          '× bare',
          'p50 ms',
          'p99 ms',
          'Node CPU',
          'Node µs/cycle',
          'Redis CPU',
          'Redis µs/cycle',
        ],
        rows.map((x) => [
          x.label,
          fmt.int(x.cyclesPerSec),
          fmt.ratio(x.ratioToBare),
          fmt.ms(x.p50Ms),
          fmt.ms(x.p99Ms),
          fmt.pct(x.nodeCpuPct),
          fmt.num(((x.nodeCpuPct / 100) * 1e6) / x.cyclesPerSec),
          fmt.pct(x.redisCpuPct),
          fmt.num(((x.redisCpuPct / 100) * 1e6) / x.cyclesPerSec),
        ]),
      ),
    );
  }

  if (r.handoff) {
    const h = r.handoff;
    out.push(`### 2. Contended handoff: ${h.waiters} waiters on one key, each holding it ${h.holdMs} ms (setTimeout)`);
    out.push(
      table(
        [
          'contender',
          'rounds',
          'handoff p50 ms',
          'p99 ms',
          'p50 × bare',
          'drain ms',
          'held ms',
          'drain / held',
          'gave up',
          'overlaps',
        ],
        h.rows.map((x) => [
          x.label,
          String(x.rounds),
          fmt.ms(x.handoffP50Ms),
          fmt.ms(x.handoffP99Ms),
          fmt.ratio(x.p50RatioToBare),
          fmt.ms(x.drainMs),
          fmt.ms(x.holdSumMs),
          fmt.ratio(x.drainToHolds),
          String(x.failures),
          String(x.overlaps),
        ]),
      ),
    );
  }

  if (r.commands) {
    const c = r.commands;
    out.push(`### 3. Redis commands per acquisition (with its release); contended = ${c.waiters} waiters on one key`);
    out.push(
      'All = INFO commandstats after CONFIG RESETSTAT (commands run inside Lua scripts included, as Redis counts them); ' +
        'wire = commands clients sent (MONITOR), i.e. requests issued.',
    );
    out.push(
      table(
        [
          'contender',
          'uncontended all',
          'wire',
          'contended all',
          'wire',
          'contended × bare',
          'contended, by command (INFO commandstats)',
          'contended wire commands',
        ],
        c.rows.map((x) => [
          x.label,
          fmt.num(x.uncontended.total),
          fmt.num(x.uncontended.wire),
          fmt.num(x.contended.total),
          fmt.num(x.contended.wire),
          fmt.ratio(x.contendedRatioToBare),
          breakdown(x.contended.byCommand),
          breakdown(x.contended.wireByCommand, 4),
        ]),
      ),
    );
  }

  if (r.readWrite) {
    const rw = r.readWrite;
    out.push(`### 4. Read/write (this library): ${rw.workers} workers`);
    out.push(
      table(
        ['variant', 'cycles/s', 'p50 ms', 'p99 ms', 'Node CPU', 'Redis CPU'],
        rw.rows.map((x) => [
          x.label,
          fmt.int(x.cyclesPerSec),
          fmt.ms(x.p50Ms),
          fmt.ms(x.p99Ms),
          fmt.pct(x.nodeCpuPct),
          fmt.pct(x.redisCpuPct),
        ]),
      ),
    );
    out.push(`Readers on one key / writers on distinct keys: ${fmt.ratio(rw.readersToDistinct)}`);
  }

  if (r.watchdog) {
    const w = r.watchdog;
    out.push(`### 5. Watchdog: ${fmt.int(w.short.locks)} locks held by one process`);
    const ms = [w.short, ...(w.atDefault ? [w.atDefault] : [])];
    out.push(
      table(
        [
          'lease',
          'ticks seen',
          'calls/tick',
          'round trips/tick',
          'locks/round trip',
          'renewed/tick',
          'tick latency ms',
          'Node CPU/tick ms',
          'Node µs/lock',
          'renewal CPU',
          'process CPU',
          'GC ms',
          'Redis cmds/tick',
          'Redis ms/tick',
          'Redis ms/call',
          'held at end',
          'lost',
        ],
        ms.map((m) => [
          `${m.leaseMs / 1000} s`,
          String(m.ticks),
          fmt.num(m.callsPerTick),
          fmt.num(m.roundTripsPerTick),
          fmt.int(m.locksPerRoundTrip),
          fmt.int(m.renewedPerTick),
          fmt.ms(m.tickLatencyMs),
          fmt.num(m.nodeCpuPerTickMs),
          fmt.num(m.nodeCpuPerLockUs),
          fmt.pct(m.renewalCpuPct),
          fmt.pct(m.nodeCpuPct),
          fmt.num(m.gcMs),
          fmt.int(m.redisCommandsPerTick),
          fmt.num(m.redisScriptMsPerTick),
          fmt.num(m.redisMsPerCall),
          fmt.int(m.heldAtEnd),
          String(m.lost),
        ]),
      ),
    );
    out.push(
      `Renewal CPU at the default 30 s lease, scaled from the ${w.short.leaseMs / 1000} s lease (× ${w.short.leaseMs / 1000} / 30): ` +
        `${fmt.num(w.scaledDefaultCpuPct)} % of a core`,
    );
  }

  if (r.http) {
    const h = r.http;
    out.push(
      `### 6. HTTP: sample app PUT /articles/:id, autocannon ${h.connections} connections, ${h.durationS} s per repetition, ${fmt.int(h.articles)} articles in rotation`,
    );
    out.push(
      table(
        [
          'variant',
          'requests/s',
          'p50 ms',
          'p99 ms',
          'app CPU',
          'app CPU ms/req',
          'Redis CPU ms/req',
          'non-2xx',
          'errors',
        ],
        h.rows.map((x) => [
          x.label,
          fmt.int(x.requestsPerSec),
          fmt.num(x.p50Ms),
          fmt.num(x.p99Ms),
          fmt.pct(x.appCpuPct),
          fmt.ms(x.appCpuMsPerRequest),
          fmt.ms(x.redisCpuMsPerRequest),
          String(x.non2xx),
          String(x.errors),
        ]),
      ),
    );
    out.push(
      `Locked / unlocked requests/s: ${fmt.ratio(h.lockedToUnlocked)} against a process that never took a lock, ` +
        `${fmt.ratio(h.lockedToUnlockedSameState)} against the same process after it took locks`,
    );
  }

  if (r.topologies) {
    const t = r.topologies;
    out.push(`### 7. Topologies: this library's LockEngine on each, started on loopback by the scenario`);
    out.push(
      `Uncontended cycles on distinct keys at ${t.workers.join(' and ')} worker(s) (× single: the rate over the single redis-server's); ` +
        `commands per cycle = INFO commandstats summed over every node, replicas included, over ${fmt.int(t.commandCycles)} sequential cycles; ` +
        `handoff = ${t.waiters} waiters on one key, each holding it ${t.holdMs} ms, as in scenario 2.`,
    );
    const rate = (x: (typeof t.rows)[number], workers: number) => x.rates.find((q) => q.workers === workers);
    out.push(
      table(
        [
          'topology',
          'nodes',
          ...t.workers.flatMap((w) => [`${w}w cycles/s`, `${w}w × single`, `${w}w p99 ms`]),
          'commands/cycle',
          'by command',
          'handoff p50 ms',
          'p99 ms',
          'drain / held',
          'overlaps',
        ],
        t.rows.map((x) =>
          x.available
            ? [
                x.label,
                String(x.nodes),
                ...t.workers.flatMap((w) => {
                  const q = rate(x, w);
                  return q ? [fmt.int(q.cyclesPerSec), fmt.ratio(q.ratioToSingle), fmt.ms(q.p99Ms)] : ['–', '–', '–'];
                }),
                fmt.num(x.commandsPerCycle),
                breakdown(x.commandsByCommand, 5),
                fmt.ms(x.handoff.p50Ms),
                fmt.ms(x.handoff.p99Ms),
                fmt.ratio(x.handoff.drainToHolds),
                String(x.handoff.overlaps),
              ]
            : [
                x.label,
                String(x.nodes),
                ...t.workers.flatMap(() => ['not available', '–', '–']),
                '–',
                '–',
                '–',
                '–',
                '–',
                '–',
              ],
        ),
      ),
    );
    const missing = t.rows.filter((x) => !x.available);
    if (missing.length > 0) out.push(missing.map((x) => `${x.label}: ${x.unavailable ?? 'not available'}.`).join(' '));
  }

  if (r.scale) {
    const sc = r.scale;
    out.push(`### 8. Scale: many locks held by one process, then released all at once (opt-in: \`--only=scale\`)`);
    out.push(
      table(
        [
          'locks',
          'lease',
          'held s',
          'acquire s',
          'lost while held',
          'release s',
          'release() false',
          'lost on release',
          'keys left',
          'behind warnings',
          'renewal failures',
          'Node CPU',
          'Redis CPU',
          'RSS MB',
        ],
        [sc.shortLease, ...sc.defaultLease].map((x) => [
          fmt.int(x.locks),
          `${x.leaseMs / 1000} s`,
          fmt.num(x.heldMs / 1000),
          fmt.num(x.acquireS),
          String(x.lostWhileHeld),
          fmt.num(x.releaseS),
          String(x.releasedFalse),
          String(x.lostOnRelease),
          String(x.leftInRedis),
          String(x.warnings.behind),
          String(x.warnings.renewalFailed),
          fmt.pct(x.nodeCpuPct),
          fmt.pct(x.redisCpuPct),
          fmt.int(x.rssMb),
        ]),
      ),
    );
    out.push(
      `Largest count held at the default 30 s lease with nothing lost: ${fmt.int(sc.largestAtDefault)} (the largest count tried was ${fmt.int(Math.max(...sc.defaultLease.map((x) => x.locks)))})`,
    );
  }

  if (r.targets?.length) {
    out.push('### Targets');
    out.push(
      table(
        ['scenario', 'target', 'measured', 'result'],
        r.targets.map((t) => [t.scenario, t.target, t.measured, t.pass ? 'pass' : '**miss**']),
      ),
    );
  }
  return out.join('\n\n') + '\n';
}
