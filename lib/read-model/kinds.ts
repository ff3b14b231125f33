import { performance } from 'node:perf_hooks';
import type { LockEngine } from '../locking/engine/lock-engine.js';
import { lockKeys } from '../redis/key-layout.js';
import { LockConfigError } from '../errors/lock-config.error.js';
import type { LockInfo } from '../types/lock.types.js';
import type { PermitInfo } from '../types/permit.types.js';
import type { BoardEntry, BoardHolder, WaitAgeSource } from './snapshot.types.js';
import { bounded, mapLimited } from '../common/async-limits.js';
import { LEADER_KIND_NAME, isLeaderKey } from './leader-rows.js';

/** What the board and the CLI need of a lock engine (internal members included). */
export type BoardEngine = Pick<
  LockEngine,
  'settings' | 'inspect' | 'forceRelease' | 'inspectPermits' | 'forceReleasePermits' | 'scanConnections' | 'activity'
>;

/** What a kind's `read` is given besides the keys. */
export interface BoardReadContext {
  readonly engine: BoardEngine;
  /** Redis server time now, in milliseconds since the epoch (this process's clock plus the measured offset). */
  readonly redisNowMs: number;
  readonly holdWarningMs: number;
  readonly waitWarningMs: number;
}

/**
 * One kind of held thing the board lists (locks now; semaphores add their own): how to recognise its main Redis key
 * among the names a scan returns, how to read many of them, and how to free one by force. Registered in
 * `BOARD_KINDS`; the page shows a `kind` column and needs no change for a new kind.
 */
export interface BoardKind {
  readonly name: string;
  /**
   * A glob suffix every main key of this kind ends with (`}` for a lock's state hash). When all kinds share one,
   * the scan asks Redis for those names only; otherwise it lists every name of the prefix and `keyOf` sorts them.
   */
  readonly nameSuffix?: string;
  /**
   * The key of a scanned name (the `keyPrefix` removed, so it starts with `{`), or `undefined` when not this kind's.
   */
  keyOf(name: string): string | undefined;
  /** Reads `keys` (all found held a moment ago): one entry each, `null` for a key no longer held. */
  read(keys: readonly string[], context: BoardReadContext): Promise<readonly (BoardEntry | null)[]>;
  /**
   * Frees `key` whoever holds it; `true` if it was held. `scope` is the kind's own choice (a semaphore: one holder
   * or all); a lock frees every holder.
   */
  forceRelease(key: string, engine: BoardEngine, scope?: string): Promise<boolean>;
}

/** How many `inspect` calls a read keeps in flight at once. */
const READ_CONCURRENCY = 64;

/**
 * Locks and semaphores: the state hash `<prefix>{<key>}` (other names end with `:<suffix>`), which a lock and a
 * semaphore name alike (they never share a key). Each key is read as a lock; a semaphore's answers that it is one
 * (`LockConfigError` on option `key`) and is read as a semaphore.
 */
export const LOCK_KIND: BoardKind = {
  name: 'lock',
  nameSuffix: '}',
  keyOf(name) {
    return name.length > 2 && name.startsWith('{') && name.endsWith('}') ? name.slice(1, -1) : undefined;
  },
  async read(keys, context) {
    const infos = await mapLimited(keys, READ_CONCURRENCY, (key) =>
      context.engine.inspect(key).catch(async (err: unknown) => {
        if (!(err instanceof LockConfigError && err.option === 'key')) throw err;
        const permits = await context.engine.inspectPermits(key);
        return permits && lockInfoOfPermits(permits);
      }),
    );
    const ownWaits = oldestOwnWaits(context.engine);
    const fairAges = await fairQueueAges(
      context,
      infos.flatMap((info) => (info && info.waiting > 0 ? [info.key] : [])),
    );
    return infos.map((info) =>
      info ? lockEntry(info, context, fairAges.get(info.key), ownWaits.get(info.key)) : null,
    );
  },
  async forceRelease(key, engine) {
    try {
      return await engine.forceRelease(key);
    } catch (err) {
      if (!(err instanceof LockConfigError && err.option === 'key')) throw err;
      // A semaphore: every permit (one holder's would need its secret token, which the board never sees).
      return (await engine.forceReleasePermits(key)) > 0;
    }
  },
};

/** A semaphore as a row: mode `permits u/n`, every holder a writer of its own permit. */
function lockInfoOfPermits(p: PermitInfo): LockInfo & { readonly permits: string } {
  return {
    key: p.key,
    mode: 'write',
    holders: p.holders,
    waiting: p.waiting,
    waitingWriters: p.waiting,
    waitingReaders: 0,
    fencingToken: p.fencingToken,
    permits: `${p.used}/${p.limit}`,
  };
}

/**
 * Semaphores, by name: their keys are found and read by `LOCK_KIND` (a semaphore's state hash is named as a lock's),
 * which labels them `'semaphore'`; this kind serves the detail view and the force release of one. Its `scope` is the
 * owner id of the holder whose permits to free (as listed), or `'all'` / none for every permit.
 */
export const SEMAPHORE_KIND: BoardKind = {
  name: 'semaphore',
  nameSuffix: '}',
  keyOf() {
    return undefined;
  },
  read(keys, context) {
    return LOCK_KIND.read(keys, context);
  },
  async forceRelease(key, engine, scope) {
    return (await engine.forceReleasePermits(key, scope && scope !== 'all' ? { owner: scope } : undefined)) > 0;
  },
};

/**
 * Leaderships, by name: the lock `leader:<name>` is found and read by `LOCK_KIND`, which labels it `'leader'`; this
 * kind serves the detail view and the force release (the leader's signal aborts at its next renewal, a standby takes
 * over).
 */
export const LEADER_KIND: BoardKind = {
  name: LEADER_KIND_NAME,
  nameSuffix: '}',
  keyOf() {
    return undefined;
  },
  read(keys, context) {
    return LOCK_KIND.read(keys, context);
  },
  forceRelease(key, engine) {
    return engine.forceRelease(key);
  },
};

/** The kinds the board and the CLI list, in the order a scanned name is offered to them. */
export const BOARD_KINDS: readonly BoardKind[] = [LOCK_KIND, SEMAPHORE_KIND, LEADER_KIND];

function lockEntry(
  info: LockInfo,
  context: BoardReadContext,
  fairAgeMs: number | undefined,
  ownAgeMs: number | undefined,
): BoardEntry {
  const holders: BoardHolder[] = info.holders.map((h) => ({
    mode: h.mode,
    owner: h.owner,
    host: h.host,
    pid: h.pid,
    app: h.app,
    holdCount: h.holdCount,
    finished: h.finished,
    since: h.since.toISOString(),
    heldMs: Math.max(0, Math.round(context.redisNowMs - h.since.getTime())),
    remainingLeaseMs: Math.max(0, Math.round(h.remainingLeaseMs)),
    fencingToken: h.fencingToken,
  }));
  let oldestWaitMs: number | null = null;
  let oldestWaitSource: WaitAgeSource | null = null;
  if (fairAgeMs !== undefined) [oldestWaitMs, oldestWaitSource] = [Math.round(fairAgeMs), 'fair-queue'];
  if (ownAgeMs !== undefined && (oldestWaitMs === null || ownAgeMs > oldestWaitMs))
    [oldestWaitMs, oldestWaitSource] = [Math.round(ownAgeMs), 'this-process'];
  // A leadership lasts, and its standbys wait, by design: flagged only when a campaign of this engine asked for it.
  const alarmed = context.engine.activity().alarmsCover(info.key);
  const holdWarningMs = alarmed ? context.holdWarningMs : 0;
  const waitWarningMs = alarmed ? context.waitWarningMs : 0;
  const permits = (info as { readonly permits?: string }).permits;
  return {
    kind: permits ? 'semaphore' : isLeaderKey(info.key) ? LEADER_KIND_NAME : 'lock',
    key: info.key,
    mode: permits ? `permits ${permits}` : info.mode,
    holders,
    waiting: info.waiting,
    waitingWriters: info.waitingWriters,
    waitingReaders: info.waitingReaders,
    fencingToken: info.fencingToken,
    oldestWaitMs,
    oldestWaitSource,
    alarms: {
      heldTooLong: holdWarningMs > 0 && holders.some((h) => !h.finished && h.heldMs > holdWarningMs),
      waitedTooLong: waitWarningMs > 0 && oldestWaitMs !== null && oldestWaitMs > waitWarningMs,
    },
  };
}

/** Per key, how long this process's oldest waiter on it has waited, in milliseconds. */
function oldestOwnWaits(engine: BoardEngine): Map<string, number> {
  const now = performance.now();
  const ages = new Map<string, number>();
  for (const wait of engine.activity().waits()) {
    const age = now - wait.startedAt;
    if (age > (ages.get(wait.key) ?? -1)) ages.set(wait.key, age);
  }
  return ages;
}

/**
 * Per key, the age of the head of its fair queue (arrival in Redis time, µs), in milliseconds: one bounded ZRANGE
 * per lock that has waiters, on the first connection (in quorum mode every master keeps its own queue; the first
 * one stands for them). Keys without a fair queue are absent. A failure leaves the ages unknown.
 */
async function fairQueueAges(context: BoardReadContext, keys: readonly string[]): Promise<Map<string, number>> {
  const ages = new Map<string, number>();
  const client = context.engine.scanConnections()[0];
  if (!client || keys.length === 0) return ages;
  const prefix = context.engine.settings.keyPrefix;
  const timeoutMs = context.engine.settings.commandTimeoutMs;
  await mapLimited(keys, READ_CONCURRENCY, async (key) => {
    try {
      const queue = lockKeys(prefix, key).queue;
      // `[member, score]`, flat (RESP2) or as one pair (RESP3, which ioredis 6 and node-redis may speak).
      const head = (
        (await bounded(client.send(['ZRANGE', queue, '0', '0', 'WITHSCORES'], queue), timeoutMs, 'ZRANGE')) as unknown[]
      ).flat();
      if (head.length === 2) ages.set(key, Math.max(0, context.redisNowMs - Number(head[1]) / 1000));
    } catch {
      // Unknown age: the entry shows the waiting count without it.
    }
  });
  return ages;
}
