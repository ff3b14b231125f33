import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Leadership } from '../../lib/leader/leader.types.js';
import { sleep, until } from '../support/lock-test-kit.js';
import { LockWorlds, STORE_KINDS } from './lock-worlds.js';

/** Resolves once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/*
 * Leader election on every kind of store: the test Redis, the memory store (the testing module's), a real Redis
 * Cluster, quorum mode over three masters, and each client library's driver (standalone and Cluster).
 */
describe.each(STORE_KINDS)('leader election (%s store)', (kind) => {
  const worlds = new LockWorlds(kind);
  afterEach(() => worlds.closeAll());

  it('one leader at a time among 3 instances, terms strictly increasing, each term handed to a standby', async () => {
    const engines = [worlds.engine(), worlds.engine(), worlds.engine()];
    let leading = 0;
    let most = 0;
    const terms: { engine: number; term: number }[] = [];
    const stops = engines.map((engine, i) =>
      engine.campaign(
        'relay',
        async (lead) => {
          leading++;
          most = Math.max(most, leading);
          terms.push({ engine: i, term: lead.term });
          await sleep(100);
          leading--;
        },
        { leaseMs: 2_000, restartDelayMs: 50 },
      ),
    );
    await until(() => terms.length >= 6, 10_000, '6 terms');
    await Promise.all(stops.map((stop) => stop()));
    expect(most).toBe(1);
    const numbers = terms.map((t) => t.term);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(terms.slice(1).every((t, i) => t.engine !== terms[i].engine)).toBe(true);
  }, 20_000);

  it('resign hands over to a waiting standby at once; leader(name) names the new term', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const leads: Leadership[] = [];
    const fn = async (lead: Leadership) => {
      leads.push(lead);
      await aborted(lead.signal);
    };
    const stopA = a.campaign('warmer', fn, { restartDelayMs: 200 });
    await until(() => leads.length === 1, 5_000, 'a leader');
    const stopB = b.campaign('warmer', fn, { restartDelayMs: 200 });
    await sleep(100); // the standby waits
    const [leader, standby] = a.isLeader('warmer') ? [a, b] : [b, a];
    const resignedAt = performance.now();
    expect(await leader.resign('warmer')).toBe(true);
    await until(() => leads.length === 2, 3_000, 'the standby elected');
    expect(performance.now() - resignedAt).toBeLessThan(1_000);
    expect(standby.isLeader('warmer')).toBe(true);
    expect(leads[1].term).toBeGreaterThan(leads[0].term);
    expect((await a.leader('warmer'))?.term).toBe(leads[1].term);
    await Promise.all([stopA(), stopB()]);
    expect(await a.leader('warmer')).toBeNull();
  }, 20_000);
});
