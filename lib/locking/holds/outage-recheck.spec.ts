import { describe, expect, it } from '@jest/globals';
import type { ConnectionStateChange } from '../../store/lock-store.js';
import { OutageRecheck } from './outage-recheck.js';

const lost = (connection: ConnectionStateChange['connection']): ConnectionStateChange => ({
  connection,
  state: 'lost',
});
const back = (connection: ConnectionStateChange['connection']): ConnectionStateChange => ({
  connection,
  state: 'restored',
  downMs: 1,
});

/** A recheck over `masters` command connections, and how many times it woke the waiters. */
function setUp(masters: number): { recheck: OutageRecheck; rechecks: () => number } {
  let count = 0;
  return { recheck: new OutageRecheck(() => count++, masters), rechecks: () => count };
}

describe('OutageRecheck', () => {
  it('re-checks at once when the wake-up connection is back and the command connection is up', () => {
    const { recheck, rechecks } = setUp(1);
    recheck.changed(lost('subscriber'));
    expect(rechecks()).toBe(0);
    recheck.changed(back('subscriber'));
    expect(rechecks()).toBe(1);
  });

  it('waits for the command connection when the wake-up connection comes back first (a retry sent now would fail), then re-checks once', () => {
    const { recheck, rechecks } = setUp(1);
    recheck.changed(lost('command'));
    recheck.changed(lost('subscriber'));
    recheck.changed(back('subscriber'));
    expect(rechecks()).toBe(0);
    recheck.changed(back('command'));
    expect(rechecks()).toBe(1);
    recheck.changed(lost('command'));
    recheck.changed(back('command'));
    expect(rechecks()).toBe(1);
  });

  it('a command connection coming back alone does not re-check; the wake-up connection back later does, at once', () => {
    const { recheck, rechecks } = setUp(1);
    recheck.changed(lost('command'));
    recheck.changed(lost('subscriber'));
    recheck.changed(back('command'));
    expect(rechecks()).toBe(0);
    recheck.changed(back('subscriber'));
    expect(rechecks()).toBe(1);
  });

  it('quorum: a master down for good does not hold the re-check up; it waits while a majority is down', () => {
    const { recheck, rechecks } = setUp(3);
    recheck.changed(lost('command'));
    recheck.changed(back('subscriber'));
    expect(rechecks()).toBe(1);
    recheck.changed(lost('command'));
    recheck.changed(back('subscriber'));
    expect(rechecks()).toBe(1);
    recheck.changed(back('command'));
    expect(rechecks()).toBe(2);
  });

  it('stop drops a pending re-check and every later one (shutdown)', () => {
    const { recheck, rechecks } = setUp(1);
    recheck.changed(lost('command'));
    recheck.changed(back('subscriber'));
    recheck.stop();
    recheck.changed(back('command'));
    expect(rechecks()).toBe(0);
    recheck.changed(lost('subscriber'));
    recheck.changed(back('subscriber'));
    expect(rechecks()).toBe(0);
  });
});
