import { describe, expect, it } from '@jest/globals';
import { fleetSeries } from './fleet-series.js';
import type { FleetInstanceRecord } from './fleet-store.js';
import { LOAD_HISTORY_WINDOW_MS } from './load-history.js';
import type { BoardLoadSample } from './board-fleet.types.js';

const NOW = 1_800_000_000_000;
const counts = (lock = 0) => ({ lock, semaphore: 0, leader: 0 });

function sample(at: number, holds: number, heldAlarms = 0): BoardLoadSample {
  return {
    at,
    holds: counts(holds),
    waiters: counts(),
    inDoubt: counts(),
    heldAlarms: counts(heldAlarms),
    waitAlarms: counts(),
  };
}

function instance(id: string, samples: BoardLoadSample[], sampleMs = 1_000): FleetInstanceRecord {
  return { id, host: 'h', pid: 1, app: 'a', sampleMs, inDoubt: [], samples };
}

describe('fleetSeries', () => {
  it('sums the instances on one grid, each at its last sample before a point, whatever their phases', () => {
    const self = { ...instance('a', [sample(NOW - 3_000, 1), sample(NOW - 2_000, 1), sample(NOW - 1_000, 1)]) };
    // Another instance with 2 holds, on a timer that drifted: two samples in one interval, none in the next.
    const other = instance('b', [sample(NOW - 2_500, 2), sample(NOW - 2_100, 2), sample(NOW - 500, 2)]);
    const fleet = fleetSeries([other], { ...self, now: sample(NOW, 1) }, NOW);
    expect(fleet.times.at(-1)).toBe(NOW);
    expect(fleet.stepMs).toBe(1_000);
    // From the second point on, both count: 3 every time (no dip from the phases).
    expect(fleet.total.slice(1).map((p) => p.holds.lock)).toEqual(fleet.total.slice(1).map(() => 3));
    expect(fleet.instances.map((i) => [i.id, i.self, i.now.holds.lock])).toEqual([
      ['a', true, 1],
      ['b', false, 2],
    ]);
  });

  it('the axis starts at the oldest sample, not fifteen minutes back; at most fifteen minutes', () => {
    const young = fleetSeries([], { ...instance('a', [sample(NOW - 30_000, 1)]), now: sample(NOW, 1) }, NOW);
    expect(young.from).toBeGreaterThanOrEqual(NOW - 31_000);
    expect(young.from).toBeLessThanOrEqual(NOW - 30_000);
    const old = fleetSeries([], { ...instance('a', [sample(NOW - 3_600_000, 1)]), now: sample(NOW, 1) }, NOW);
    expect(NOW - old.from).toBeLessThanOrEqual(LOAD_HISTORY_WINDOW_MS);
    expect(old.times.length).toBeLessThanOrEqual(301);
  });

  it('an instance that stopped sampling counts for two of its intervals, then not at all', () => {
    const gone = instance('b', [sample(NOW - 10_000, 5)]);
    const self = { ...instance('a', [sample(NOW - 10_000, 0)]), now: sample(NOW, 0) };
    const fleet = fleetSeries([gone], self, NOW);
    const at = (ms: number) => fleet.total.find((p) => p.at === NOW - ms)!.holds.lock;
    expect([at(10_000), at(9_000), at(8_000), at(7_000), at(0)]).toEqual([5, 5, 5, 0, 0]);
  });

  it('alarms count once, in the interval that ends at or after them', () => {
    const self = {
      ...instance('a', [sample(NOW - 2_000, 1, 2), sample(NOW - 1_500, 1, 1), sample(NOW - 1_000, 1, 0)]),
      now: sample(NOW, 1, 4),
    };
    const fleet = fleetSeries([], self, NOW);
    const alarms = fleet.total.map((p) => p.heldAlarms.lock);
    expect(alarms.reduce((a, b) => a + b, 0)).toBe(7);
    expect(fleet.total.find((p) => p.at === NOW - 1_000)!.heldAlarms.lock).toBe(1);
    expect(fleet.instances[0].now.heldAlarms.lock).toBe(7);
  });
});
