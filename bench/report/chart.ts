import { View, parse } from 'vega';
import { compile } from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import type { BenchResults } from '../results.js';

type Row = Record<string, string | number>;

const WIDTH = 560;
const HEIGHT = 220;

/** The power of ten at or below the smallest positive value: where log-scale bars start. */
function logFloor(values: Row[]): number {
  const min = Math.min(...values.map((v) => Number(v.value)).filter((v) => v > 0));
  return Number.isFinite(min) ? 10 ** Math.floor(Math.log10(min)) : 1;
}

function groupedBars(title: string, values: Row[], yTitle: string, log: boolean, order: string[]) {
  const seriesOrder = [...new Set(values.map((v) => String(v.series)))];
  const base = log ? logFloor(values) : 0;
  return {
    title,
    width: WIDTH,
    height: HEIGHT,
    data: { values },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'contender', type: 'nominal', sort: order, axis: { labelAngle: -30, title: null } },
      xOffset: { field: 'series', type: 'nominal', sort: seriesOrder },
      y: {
        field: 'value',
        type: 'quantitative',
        title: yTitle,
        ...(log ? { scale: { type: 'log', domainMin: base } } : {}),
      },
      // Bars on a log scale need an explicit base (log 0 does not exist).
      ...(log ? { y2: { datum: base } } : {}),
      color: { field: 'series', type: 'nominal', sort: seriesOrder, title: null, legend: { orient: 'top' } },
    },
  };
}

/** The results chart (SVG), rendered server-side by Vega-Lite/Vega with no browser. */
export async function renderChart(r: BenchResults): Promise<string> {
  const order = r.contenders.map((c) => c.id);
  const panels: unknown[] = [];
  if (r.uncontended) {
    const values = r.uncontended.byWorkers.flatMap(({ workers, rows }) =>
      rows.map((x) => ({
        contender: x.id,
        series: `${workers} worker${workers > 1 ? 's' : ''}`,
        value: Math.round(x.cyclesPerSec),
      })),
    );
    panels.push(
      groupedBars('1. Uncontended acquire+release cycles/s (higher is better)', values, 'cycles/s', false, order),
    );
  }
  if (r.handoff) {
    const values = r.handoff.rows.flatMap((x) => [
      { contender: x.id, series: 'handoff p50', value: x.handoffP50Ms },
      { contender: x.id, series: 'handoff p99', value: x.handoffP99Ms },
    ]);
    panels.push(
      groupedBars(
        `2. Handoff latency, ${r.handoff.waiters} waiters on one key (ms, log; lower is better)`,
        values,
        'ms',
        true,
        order,
      ),
    );
  }
  if (r.commands) {
    const values = r.commands.rows.flatMap((x) => [
      { contender: x.id, series: 'uncontended', value: x.uncontended.total },
      { contender: x.id, series: 'contended', value: x.contended.total },
    ]);
    panels.push(
      groupedBars(
        '3. Redis commands per acquisition, INFO commandstats (log; lower is better)',
        values,
        'commands',
        true,
        order,
      ),
    );
  }
  if (r.topologies) {
    const rows = r.topologies.rows.filter((x) => x.available);
    const order = rows.map((x) => x.id);
    const rates = rows.flatMap((x) =>
      x.rates.map((q) => ({
        contender: x.id,
        series: `${q.workers} worker${q.workers > 1 ? 's' : ''}`,
        value: Math.round(q.cyclesPerSec),
      })),
    );
    panels.push(
      groupedBars('7. Topologies: LockEngine uncontended cycles/s (higher is better)', rates, 'cycles/s', false, order),
    );
    const handoffs = rows.flatMap((x) => [
      { contender: x.id, series: 'handoff p50', value: x.handoff.p50Ms },
      { contender: x.id, series: 'handoff p99', value: x.handoff.p99Ms },
    ]);
    panels.push(
      groupedBars(
        `7. Topologies: handoff latency, ${r.topologies.waiters} waiters on one key (ms, log; lower is better)`,
        handoffs,
        'ms',
        true,
        order,
      ),
    );
  }
  if (r.targets?.length) {
    const values = r.targets.map((t) => ({
      target: `${t.scenario.replace(/^\d+ /, '')}: ${t.target}`.slice(0, 90),
      attainment: Math.min(Math.max(t.attainment, 0.01), 100),
      result: t.pass ? 'pass' : 'miss',
    }));
    panels.push({
      title: 'Targets of this library: measured ÷ target, 1 = just met (log; right of the line is a pass)',
      width: WIDTH,
      height: { step: 14 },
      data: { values },
      layer: [
        {
          mark: { type: 'bar', tooltip: true },
          encoding: {
            y: {
              field: 'target',
              type: 'nominal',
              sort: null,
              axis: { title: null, labelLimit: 420, labelFontSize: 9 },
            },
            x: {
              field: 'attainment',
              type: 'quantitative',
              scale: { type: 'log', domain: [0.01, 100] },
              title: 'attainment (×)',
            },
            // Each bar runs from the target (1) to the measurement: left of the line a miss, right of it a pass.
            x2: { datum: 1 },
            color: {
              field: 'result',
              type: 'nominal',
              scale: { domain: ['pass', 'miss'], range: ['#4c9a2a', '#d1495b'] },
              legend: { orient: 'top', title: null },
            },
          },
        },
        { mark: { type: 'rule', color: 'black' }, encoding: { x: { datum: 1 } } },
      ],
    });
  }
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `nest-redis-locks benchmarks, ${r.date.slice(0, 10)}`,
      subtitle: `${r.machine.cpu}, ${r.machine.cores} cores; Node ${r.machine.node}; Redis ${r.machine.redis}; ${r.mode} run`,
    },
    config: { font: 'sans-serif', view: { stroke: null } },
    vconcat: panels,
    spacing: 40,
    resolve: {
      scale: { color: 'independent', x: 'independent', y: 'independent', xOffset: 'independent' },
      legend: { color: 'independent' },
    },
  } as unknown as TopLevelSpec;
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}
