import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { LockBoardModule } from '../../lib/board/lock-board.module.js';
import type { BoardSnapshot } from '../../lib/read-model/snapshot.types.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { ScheduledLock } from '../../lib/schedule/scheduled-lock.decorator.js';
import { DRIVERS, openDriverClient } from '../support/driver-clients.js';
import type { DriverClient, DriverName, DriverTarget } from '../support/driver-clients.js';
import { LockTestKit, deferred, redisUrl, uniquePrefix } from '../support/lock-test-kit.js';
import { RedisCluster } from '../support/topologies.js';

/*
 * What sits on top of the locks works the same whatever the application's client: two Nest applications, each with
 * its own client of one library, share a scheduled job's fire (one runs it, the other skips), and the lock board of
 * one lists what the other holds (a SCAN through the driver: on a Cluster, of every master). On the test Redis and
 * on a real 3-master Redis Cluster.
 */

let fires = 0;
const gate = { current: deferred() };

@Injectable()
class ReportJob {
  // Called directly: a call is the fire of the latest tick of its schedule.
  @ScheduledLock('driver-report', { holdAtLeastMs: 0 })
  async run(): Promise<string> {
    fires++;
    await gate.current.promise;
    return 'reported';
  }
}

type Topology = 'standalone' | 'cluster';
const CASES: readonly (readonly [DriverName, Topology])[] = DRIVERS.flatMap((d) => [
  [d, 'standalone'] as const,
  [d, 'cluster'] as const,
]);

describe.each(CASES)('the %s driver (%s) under Nest: scheduled jobs and the board', (name, topology) => {
  const kit = new LockTestKit();
  let cluster: RedisCluster | undefined;
  const clients: DriverClient[] = [];

  beforeAll(async () => {
    if (topology === 'cluster') cluster = await RedisCluster.start();
  }, 60_000);
  afterEach(async () => {
    gate.current.resolve();
    gate.current = deferred();
    fires = 0;
    await kit.closeAll();
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(() => cluster?.dispose());

  const target = (): DriverTarget =>
    cluster ? { cluster: cluster.nodes.map(({ host, port }) => ({ host, port })) } : { url: redisUrl() };

  const app = async (prefix: string) => {
    const client = await openDriverClient(name, target());
    clients.push(client);
    const started = await kit.startApp({
      imports: [
        RedisLockModule.forRoot({ redis: client.client as never, keyPrefix: prefix }),
        LockBoardModule.forRoot({}),
      ],
      providers: [ReportJob],
    });
    if (cluster) kit.watchKeys(prefix, cluster.keysUnder);
    else kit.watchPrefix(redisUrl(), prefix);
    const origin = `http://127.0.0.1:${(started.getHttpServer().address() as { port: number }).port}`;
    return { app: started, origin, locks: started.get(LockService), job: started.get(ReportJob) };
  };

  it('one fire of a scheduled job runs on one instance only; the board of one lists the lock the other holds', async () => {
    const prefix = uniquePrefix(`apps-${name}`);
    const a = await app(prefix);
    const b = await app(prefix);
    const runs = [a.job.run(), b.job.run()];
    // The instance that skipped settles at once; the one that runs waits for the gate.
    await Promise.race(runs);
    expect(fires).toBe(1);
    gate.current.resolve();
    const results = await Promise.all(runs);
    expect(fires).toBe(1);
    expect(results.filter((r) => r === 'reported')).toHaveLength(1);

    const held = await b.locks.acquire('invoice:7');
    const snapshot = (await (await fetch(`${a.origin}/locks/api/snapshot`)).json()) as BoardSnapshot;
    const entry = snapshot.entries.find((e) => e.key === 'invoice:7');
    expect(entry).toMatchObject({ kind: 'lock', mode: 'write' });
    expect(entry?.holders[0]).toMatchObject({ pid: process.pid });
    expect(snapshot.complete).toBe(true);
    await held.release();
  }, 30_000);
});
