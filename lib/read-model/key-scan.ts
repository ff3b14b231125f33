import { performance } from 'node:perf_hooks';
import type { DriverNode, RedisDriver } from '../redis/driver/redis-driver.js';
import { bounded } from '../common/async-limits.js';
import type { BoardScanFailure } from './snapshot.types.js';
import { errorText } from '../common/error-text.js';

/** How far one scan may go. */
export interface ScanLimits {
  /** `COUNT` of each SCAN call: how many slots of the keyspace Redis visits per call. */
  readonly count: number;
  /** The scan stops (incomplete) after this long, in milliseconds, whatever is left. */
  readonly budgetMs: number;
  /** The most one SCAN call may take, in milliseconds. */
  readonly callTimeoutMs: number;
  /** The scan stops once it has found more than this many names (the caller reads no more than that anyway). */
  readonly stopAfter: number;
}

/** What a scan found. */
export interface ScanResult {
  /** The names found (the client's own `keyPrefix` removed), in scan order, without duplicates. */
  readonly names: readonly string[];
  /** Whether every master was scanned to the end. */
  readonly complete: boolean;
  /** Why it stopped before the end: more names than `stopAfter`, or the time budget. */
  readonly cut: 'max-keys' | 'time-budget' | undefined;
  readonly failures: readonly BoardScanFailure[];
  /** How many masters there were to scan. */
  readonly masters: number;
  /** Redis server time minus this process's `Date.now()` at the start, in milliseconds (`0` when unknown). */
  readonly clockOffsetMs: number;
}

/** `text` with Redis glob characters escaped, so it matches itself only. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * SCANs every master behind `connections` (a `Cluster` client stands for each of its masters; several connections
 * are the independent masters of a quorum) for names matching `pattern` (a glob, without the client's own
 * `keyPrefix`), one master after another, until each cursor returns to 0 or the time budget is spent. Every call is
 * bounded; a master that fails or times out is reported in `failures` and the others are still scanned. A name
 * found on several masters (quorum) is listed once.
 */
export async function scanKeys(
  connections: readonly RedisDriver[],
  pattern: string,
  limits: ScanLimits,
): Promise<ScanResult> {
  const deadline = performance.now() + limits.budgetMs;
  const nodes = connections.flatMap((c) => mastersOf(c));
  const seen = new Set<string>();
  const failures: BoardScanFailure[] = [];
  let complete = true;
  let cut: ScanResult['cut'];
  let clockOffsetMs: number | undefined;
  for (const { node, label, failure, prefix: prefixOf } of nodes) {
    if (cut) break;
    if (seen.size > limits.stopAfter) {
      cut = 'max-keys';
      break;
    }
    if (failure) {
      failures.push({ master: label, error: failure });
      continue;
    }
    const own = prefixOf;
    try {
      if (clockOffsetMs === undefined) {
        const before = Date.now();
        const [s, us] = (await bounded(node.send(['TIME']), limits.callTimeoutMs, 'TIME')) as [string, string];
        clockOffsetMs = Number(s) * 1000 + Math.floor(Number(us) / 1000) - Math.round((before + Date.now()) / 2);
      }
      let cursor = '0';
      do {
        if (performance.now() > deadline) {
          cut = 'time-budget';
          break;
        }
        if (seen.size > limits.stopAfter) {
          cut = 'max-keys';
          break;
        }
        const [next, batch] = (await bounded(
          node.send(['SCAN', cursor, 'MATCH', globEscape(own) + pattern, 'COUNT', limits.count]),
          limits.callTimeoutMs,
          'SCAN',
        )) as [string, string[]];
        cursor = String(next);
        for (const name of batch) seen.add(own && name.startsWith(own) ? name.slice(own.length) : name);
      } while (cursor !== '0');
    } catch (err) {
      complete = false;
      failures.push({ master: label, error: errorText(err) });
    }
  }
  if (nodes.length === 0 || cut) complete = false;
  return { names: [...seen], complete, cut, failures, masters: nodes.length, clockOffsetMs: clockOffsetMs ?? 0 };
}

interface ScanNode {
  readonly node: DriverNode;
  readonly label: string;
  /** The client's own key prefix (ioredis' `keyPrefix`), which SCAN does not add. */
  readonly prefix: string;
  readonly failure?: string;
}

/** The masters to scan behind `driver`: the server, or each master of a Cluster (from the client's slot map). */
function mastersOf(driver: RedisDriver): ScanNode[] {
  const masters = driver.masters();
  if (masters.length === 0) {
    // No slot map yet: the client is still connecting, or could not reach any node.
    return [
      {
        node: { label: 'cluster', send: () => Promise.reject(new Error('no Cluster master known')) },
        label: 'cluster',
        prefix: driver.keyPrefix,
        failure: `no Cluster master known (client ${driver.connected ? 'ready' : 'not connected'}): Redis Cluster cannot be reached`,
      },
    ];
  }
  return masters.map((node) => ({ node, label: node.label, prefix: driver.keyPrefix }));
}
