// The benchmark run (compiled to dist-bench/ and started by bench/run.mjs, which also provides the Redis server).
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, selected } from './config.js';
import { CONTENDERS } from './contenders/index.js';
import { renderChart } from './report/chart.js';
import { updateReadme } from './report/readme.js';
import { renderTables } from './report/tables.js';
import { evaluateTargets } from './report/targets.js';
import type { BenchResults } from './results.js';
import { runCommands } from './scenarios/commands.scenario.js';
import { runHandoff } from './scenarios/handoff.scenario.js';
import { runHttp } from './scenarios/http.scenario.js';
import { runReadWrite } from './scenarios/read-write.scenario.js';
import { runUncontended } from './scenarios/uncontended.scenario.js';
import { runWatchdog } from './scenarios/watchdog.scenario.js';
import { runScale } from './scenarios/scale.scenario.js';
import { runTopologies } from './scenarios/topologies.scenario.js';
import { makeLog } from './support/log.js';
import { currentLoad, libraryRevision, machineInfo } from './support/machine.js';
import { RedisStats } from './support/redis-stats.js';

/** The project root: this file runs as dist-bench/bench/main.js. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * `--contenders=engine,semaphore` (or `BENCH_CONTENDERS`): only those contenders, for quicker A/B runs; `bare` is
 * always kept, since every ratio is taken against it. All of them by default.
 */
function pickContenders(argv: readonly string[], env: NodeJS.ProcessEnv): typeof CONTENDERS {
  const arg =
    argv.find((a) => a.startsWith('--contenders='))?.slice('--contenders='.length) ?? env.BENCH_CONTENDERS ?? '';
  const ids = arg
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (ids.length === 0) return CONTENDERS;
  for (const id of ids) {
    if (!CONTENDERS.some((c) => c.id === id))
      throw new Error(`unknown contender "${id}"; expected one of ${CONTENDERS.map((c) => c.id).join(', ')}`);
  }
  return CONTENDERS.filter((c) => c.kind === 'bare' || ids.includes(c.id));
}

async function main(): Promise<void> {
  const config = loadConfig(process.argv.slice(2), process.env);
  const url = process.env.BENCH_REDIS_URL;
  if (!url) throw new Error('BENCH_REDIS_URL is not set: start the bench with `npm run bench` (bench/run.mjs)');
  const log = makeLog();
  const contenders = pickContenders(process.argv.slice(2), process.env);
  const stats = new RedisStats(url);
  const started = performance.now();
  const mode = config.quick ? 'quick' : config.only.length > 0 ? 'partial' : 'full';
  const results: BenchResults = {
    date: new Date().toISOString(),
    mode,
    machine: machineInfo(await stats.serverVersion()),
    library: libraryRevision(ROOT),
    config,
    contenders: contenders.map(({ id, label, kind, settings }) => ({ id, label, kind, settings })),
  };
  await stats.flush();
  try {
    if (selected(config, 'uncontended'))
      results.uncontended = await runUncontended(config, contenders, url, stats, log);
    if (selected(config, 'handoff')) results.handoff = await runHandoff(config, contenders, url, stats, log);
    if (selected(config, 'commands')) results.commands = await runCommands(config, contenders, url, stats, log);
    if (selected(config, 'read-write')) results.readWrite = await runReadWrite(config, url, stats, log);
    if (selected(config, 'watchdog')) results.watchdog = await runWatchdog(config, url, stats, log);
    if (selected(config, 'http')) results.http = await runHttp(config, url, stats, log);
    if (selected(config, 'topologies')) results.topologies = await runTopologies(config, log);
    if (selected(config, 'scale')) results.scale = await runScale(config, url, stats, log);
  } finally {
    await stats.close();
  }
  results.machine.loadAtEnd = currentLoad();
  results.durationS = Math.round((performance.now() - started) / 1000);
  results.targets = evaluateTargets(results);

  const tables = renderTables(results);
  process.stdout.write(`\n${tables}`);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  // The opt-in scale scenario keeps its own results (the README quotes them), apart from other partial runs.
  const base =
    mode === 'full'
      ? 'latest'
      : mode === 'partial' && config.only.length === 1 && config.only[0] === 'scale'
        ? 'scale'
        : mode;
  writeFileSync(join(dir, `${base}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(dir, `${base}.svg`), await renderChart(results));
  if (mode === 'full') {
    const chart = '![benchmark chart](results/latest.svg)';
    updateReadme(join(ROOT, 'bench', 'README.md'), `${chart}\n\n${tables}`);
  }
  log(
    `done in ${results.durationS} s: bench/results/${base}.json, bench/results/${base}.svg${mode === 'full' ? ', bench/README.md' : ''}`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
