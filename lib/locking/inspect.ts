import type { LockKeys } from '../redis/key-layout.js';
import { INSPECT } from '../redis/lua-scripts.js';
import { runScript } from '../redis/script-runner.js';
import type { RedisClient } from '../redis/script-runner.js';
import type { LockHolderInfo, LockInfo } from './lock.types.js';

/** Reads a consistent snapshot of one lock (one script call) and decodes it. */
export async function inspectLock(client: RedisClient, keys: LockKeys): Promise<LockInfo | null> {
  const [now, fields, leases, writersWaiting, readersWaiting] = (await runScript(
    client,
    INSPECT,
    keys.all,
    [],
  )) as [number, string[], string[], number, number];
  const state = new Map<string, string>();
  for (let i = 0; i < fields.length; i += 2) state.set(fields[i], fields[i + 1]);
  const writer = state.get('w');
  const holders: LockHolderInfo[] = [];
  for (let i = 0; i < leases.length; i += 2) {
    const token = leases[i];
    const raw = state.get(`h:${token}`);
    if (!raw) continue;
    // count|seq|fence|since|host|pid|app|owner
    const [count, , fence, since, host, pid, app, owner] = raw.split('|');
    holders.push({
      mode: token === writer ? 'write' : 'read',
      owner,
      host,
      pid: Number(pid),
      app,
      holdCount: Number(count),
      since: new Date(Number(since)),
      remainingLeaseMs: Number(leases[i + 1]) - now,
      fencingToken: Number(fence),
    });
  }
  if (holders.length === 0) return null;
  return {
    key: keys.key,
    mode: holders.some((h) => h.mode === 'write') ? 'write' : 'read',
    holders,
    waiting: writersWaiting + readersWaiting,
    waitingWriters: writersWaiting,
    waitingReaders: readersWaiting,
    fencingToken: Number(state.get('f') ?? 0),
  };
}
