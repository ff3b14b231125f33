import { bounded } from '../common/async-limits.js';
import type { LoadCounts } from '../types/load.types.js';
import type { RedisDriver } from '../redis/driver/redis-driver.js';
import type { BoardLoadSample } from './board-fleet.types.js';
import { errorText } from '../common/error-text.js';

/** What an instance publishes of itself besides its samples (the board's per-instance breakdown). */
export interface FleetInstanceInfo {
  /** The engine's instance id (random per process start). */
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly app: string;
  /** How often it samples, in milliseconds (`historySampleMs`). */
  readonly sampleMs: number;
  /** Its holds in doubt at its last write (at most `MAX_DOUBT_LISTED`). */
  readonly inDoubt: readonly { readonly key: string; readonly owner: string }[];
}

/** One instance as read from Redis: what it published. */
export interface FleetInstanceRecord extends FleetInstanceInfo {
  readonly samples: readonly BoardLoadSample[];
}

/** The most holds in doubt an instance lists in its record. */
export const MAX_DOUBT_LISTED = 20;
/** How many sample intervals an instance's record outlives its last write. */
const RECORD_INTERVALS = 3;
/** How long the index outlives the last write of any instance, in record lifetimes. */
const INDEX_LIFETIMES = 10;

/**
 * The Redis names of the fleet's board samples under `keyPrefix`. One hash tag for all of them, so that on a Cluster
 * every name lives in one slot and an instance's write, or a board's read, is one pipeline to one master. They start
 * with `<keyPrefix>board:`, never with `<keyPrefix>{`, so no lock or semaphore key can name them and the board's scan
 * of held keys never meets them.
 */
export function fleetNames(keyPrefix: string) {
  const base = `${keyPrefix}board:fleet:{fleet}`;
  return {
    /** Sorted set: instance id, scored with the time its record expires (its clock, milliseconds). */
    index: `${base}:instances`,
    /** List: the instance's samples, oldest first, capped to its window. */
    samples: (id: string) => `${base}:${id}:samples`,
    /** String: the instance's `FleetInstanceInfo` as JSON. */
    info: (id: string) => `${base}:${id}:info`,
  };
}

const KINDS = ['lock', 'semaphore', 'leader'] as const;
const FIELDS = ['holds', 'waiters', 'inDoubt', 'heldAlarms', 'waitAlarms'] as const;

/** A sample as Redis keeps it: `[at, …holds, …waiters, …inDoubt, …heldAlarms, …waitAlarms]` (16 numbers). */
export function encodeSample(s: BoardLoadSample): string {
  return JSON.stringify([s.at, ...FIELDS.flatMap((f) => KINDS.map((k) => s[f][k]))]);
}

/** The sample of `encodeSample`; `undefined` for anything else. */
export function decodeSample(text: unknown): BoardLoadSample | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(String(text));
  } catch {
    return undefined;
  }
  if (!Array.isArray(raw) || raw.length !== 1 + FIELDS.length * KINDS.length) return undefined;
  if (!raw.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)) return undefined;
  const nums = raw as number[];
  const counts = (i: number): LoadCounts => ({
    lock: nums[1 + i * 3],
    semaphore: nums[2 + i * 3],
    leader: nums[3 + i * 3],
  });
  return {
    at: nums[0],
    holds: counts(0),
    waiters: counts(1),
    inDoubt: counts(2),
    heldAlarms: counts(3),
    waitAlarms: counts(4),
  };
}

/**
 * One instance's side of the fleet: writes its samples to Redis (never on a lock's path: from the sampling timer), and
 * reads the other instances' records for its board. Every round trip is bounded by `timeoutMs`; a write that fails
 * keeps its samples for the next one (at most `capacity`), so an instance back from an outage fills its gap.
 */
export class FleetStore {
  private readonly names: ReturnType<typeof fleetNames>;
  private pending: BoardLoadSample[] = [];
  private writing = false;
  /** Why the last write failed (`undefined` once one succeeded). */
  lastWriteError: string | undefined;

  constructor(
    private readonly connection: () => RedisDriver | undefined,
    keyPrefix: string,
    private readonly info: () => FleetInstanceInfo,
    private readonly capacity: number,
    private readonly timeoutMs: number,
  ) {
    this.names = fleetNames(keyPrefix);
  }

  /**
   * Writes `sample` (and those a failed write left) in one pipeline: `RPUSH` + `LTRIM` + `PEXPIRE` of the samples,
   * `SET … PX` of the info, `ZADD` + `ZREMRANGEBYSCORE` + `PEXPIRE` of the index. Never rejects.
   */
  async publish(sample: BoardLoadSample): Promise<void> {
    this.pending.push(sample);
    if (this.pending.length > this.capacity) this.pending.splice(0, this.pending.length - this.capacity);
    const client = this.connection();
    if (this.writing || !client) return;
    this.writing = true;
    const batch = this.pending.slice();
    try {
      const info = this.info();
      const ttl = RECORD_INTERVALS * info.sampleMs + this.timeoutMs;
      const now = Date.now();
      const { index, samples, info: infoKey } = this.names;
      const replies = await bounded(
        client.pipeline(
          [
            ['RPUSH', samples(info.id), ...batch.map(encodeSample)],
            ['LTRIM', samples(info.id), -this.capacity, -1],
            ['PEXPIRE', samples(info.id), ttl],
            ['SET', infoKey(info.id), JSON.stringify(info), 'PX', ttl],
            ['ZADD', index, now + ttl, info.id],
            ['ZREMRANGEBYSCORE', index, '-inf', now - INDEX_LIFETIMES * ttl],
            ['PEXPIRE', index, INDEX_LIFETIMES * ttl],
          ],
          index,
        ),
        this.timeoutMs,
        'the board samples write',
      );
      const failed = replies.find(([err]) => err)?.[0];
      if (failed) throw failed;
      this.pending.splice(0, batch.length);
      this.lastWriteError = undefined;
    } catch (err) {
      this.lastWriteError = errorText(err);
    } finally {
      this.writing = false;
    }
  }

  /** The records of every instance in the index whose record is still there (its own included). */
  async read(): Promise<FleetInstanceRecord[]> {
    const client = this.connection();
    if (!client) return [];
    const { index, samples, info } = this.names;
    const ids = (await bounded(client.send(['ZRANGE', index, 0, -1], index), this.timeoutMs, 'ZRANGE')) as string[];
    if (!ids.length) return [];
    const replies = await bounded(
      client.pipeline(
        ids.flatMap((id) => [
          ['GET', info(id)],
          ['LRANGE', samples(id), 0, -1],
        ]),
        index,
      ),
      this.timeoutMs,
      'the board samples read',
    );
    const records: FleetInstanceRecord[] = [];
    const gone: string[] = [];
    ids.forEach((id, i) => {
      const [[infoErr, infoText], [listErr, list]] = [replies[2 * i], replies[2 * i + 1]];
      const err = infoErr ?? listErr;
      if (err) throw err;
      if (typeof infoText !== 'string' || !Array.isArray(list)) return void gone.push(id); // expired: it is gone
      const parsed = JSON.parse(infoText) as FleetInstanceInfo;
      const decoded = list.map(decodeSample).filter((s): s is BoardLoadSample => s !== undefined);
      records.push({ ...parsed, samples: decoded });
    });
    // An instance that died never removed itself: the first board to find its record expired does (bounded, or not).
    if (gone.length)
      await bounded(client.send(['ZREM', index, ...gone], index), this.timeoutMs, 'ZREM').catch(() => undefined);
    return records;
  }

  /** Removes this instance's record (shutdown). Never rejects. */
  async withdraw(): Promise<void> {
    const client = this.connection();
    if (!client) return;
    const { id } = this.info();
    const { index, samples, info } = this.names;
    await bounded(
      client.pipeline(
        [
          ['DEL', samples(id)],
          ['DEL', info(id)],
          ['ZREM', index, id],
        ],
        index,
      ),
      this.timeoutMs,
      'the board samples removal',
    ).catch(() => undefined);
  }
}
