import { afterEach, describe, expect, it } from '@jest/globals';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { rejectionOf } from '../support/lock-test-kit.js';
import { LockWorlds, STANDALONE_PERMIT_KINDS } from './lock-worlds.js';
import { permitSemantics } from './permits.suite.js';

// The semaphore semantics on one Redis (each client library) and in memory; the Cluster kinds: permits-cluster.spec.ts.
permitSemantics(STANDALONE_PERMIT_KINDS);

describe('semaphores (quorum mode)', () => {
  const worlds = new LockWorlds('quorum');
  afterEach(() => worlds.closeAll());

  it('refuses them with LockConfigError explaining why: a majority of masters each admitting `limit` holders would admit more', async () => {
    const a = worlds.engine();
    let ran = false;
    const attempts = [
      a.acquirePermit('k', { limit: 2 }),
      a.tryAcquirePermit('k', { limit: 2 }),
      a.withPermit('k', () => (ran = true), { limit: 2 }),
      a.inspectPermits('k'),
      a.setPermitLimit('k', 2),
    ];
    for (const attempt of attempts) {
      const err = await rejectionOf(attempt);
      expect(err).toBeInstanceOf(LockConfigError);
      expect((err as Error).message).toMatch(/quorum mode.*limit x masters \/ majority.*use one Redis/);
    }
    expect(ran).toBe(false);
    expect(await worlds.keys()).toEqual([]);
  });
});
