import type { BoardEntry, BoardSnapshot } from '../read-model/snapshot.types.js';

/**
 * `text` safe to print on a terminal: keys and host names are user data, and a control character (an escape
 * sequence) in them must not move the cursor, recolour or retitle the terminal. Shown as `\xNN` instead.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** 850 ms, 12.3 s, 5m03s, 2h05m, 3d04h. */
export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '-';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  const two = (n: number) => String(n).padStart(2, '0');
  if (s < 3_600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)}h${two(Math.floor((s % 3_600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor((s % 86_400) / 3_600))}h`;
}

function holderCell(entry: BoardEntry): string {
  return entry.holders
    .map(
      (h) =>
        `${h.mode === 'read' ? 'r' : 'w'} ${h.owner}@${h.host}:${h.pid}${h.app ? ` (${h.app})` : ''}` +
        `${h.finished ? ' finished' : h.holdCount > 1 ? ` x${h.holdCount}` : ''}`,
    )
    .join('; ');
}

function alarmCell(entry: BoardEntry, snapshot: Pick<BoardSnapshot, 'holdWarningMs' | 'waitWarningMs'>): string {
  const out: string[] = [];
  if (entry.alarms.heldTooLong) out.push(`HELD>${duration(snapshot.holdWarningMs)}`);
  if (entry.alarms.waitedTooLong) out.push(`WAIT>${duration(snapshot.waitWarningMs)}`);
  return out.join(' ');
}

function waitingCell(entry: BoardEntry): string {
  if (entry.waiting === 0) return '0';
  return `${entry.waiting}${entry.oldestWaitMs === null ? '' : ` (oldest ${duration(entry.oldestWaitMs)})`}`;
}

/** Columns padded to the widest cell; the last column is not padded. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

/** The `list` / `watch` table with its summary lines. */
export function formatSnapshot(snapshot: BoardSnapshot): string {
  const out: string[] = [];
  if (snapshot.error) return `error: ${printable(snapshot.error)}`;
  const oldest = (e: BoardEntry) => Math.max(0, ...e.holders.map((h) => h.heldMs));
  const shortest = (e: BoardEntry) => Math.min(...e.holders.map((h) => h.remainingLeaseMs));
  const rows = snapshot.entries.map((e) => [
    e.kind,
    printable(e.key),
    e.mode,
    duration(oldest(e)),
    duration(shortest(e)),
    String(e.fencingToken),
    waitingCell(e),
    alarmCell(e, snapshot) || '-',
    printable(holderCell(e)),
  ]);
  // The key the user typed, not the Redis key: the prefix's hash-tag braces are the library's business.
  const where = `${printable(snapshot.keyPrefix)}${snapshot.filter ? ` whose key starts with "${printable(snapshot.filter)}"` : ''}`;
  if (rows.length > 0)
    out.push(table(['KIND', 'KEY', 'MODE', 'HELD', 'LEASE', 'FENCE', 'WAITING', 'ALARM', 'HOLDERS'], rows));
  const flagged = snapshot.entries.filter((e) => e.alarms.heldTooLong || e.alarms.waitedTooLong).length;
  const summary = [`${snapshot.entries.length} held under ${where}`];
  if (flagged) summary.push(`${flagged} flagged by the deadlock alarm`);
  if (snapshot.more > 0)
    summary.push(`${snapshot.cut ? 'at least ' : ''}${snapshot.more} more, narrow the prefix (or raise --max-keys)`);
  if (snapshot.cut === 'max-keys') summary.push('the scan stopped there: the locks shown are the first it met');
  if (snapshot.cut === 'time-budget') summary.push('the scan stopped at its time budget: some keys may be missing');
  for (const f of snapshot.failures) summary.push(`master ${f.master} could not be scanned: ${printable(f.error)}`);
  out.push(`${summary.join('; ')}.`);
  return out.join('\n');
}

/** The `inspect` view of one lock. */
export function formatEntry(
  entry: BoardEntry | null,
  key: string,
  snapshot: Pick<BoardSnapshot, 'holdWarningMs' | 'waitWarningMs'>,
): string {
  if (!entry) return `${printable(key)}: not held`;
  const lines = [
    `${entry.kind} ${printable(entry.key)}: ${entry.mode}, fencing token ${entry.fencingToken}`,
    `waiting: ${entry.waitingWriters} writer(s), ${entry.waitingReaders} reader(s)` +
      `${entry.oldestWaitMs === null ? '' : `, oldest for ${duration(entry.oldestWaitMs)} (${entry.oldestWaitSource})`}`,
  ];
  const alarms = alarmCell(entry, snapshot);
  if (alarms) lines.push(`alarm: ${alarms}`);
  lines.push(
    table(
      ['MODE', 'OWNER', 'APP', 'HOST', 'PID', 'COUNT', 'SINCE', 'HELD', 'LEASE', 'FENCE'],
      entry.holders.map((h) => [
        h.mode,
        printable(h.owner),
        printable(h.app) || '-',
        printable(h.host),
        String(h.pid),
        h.finished ? '0 (finished)' : String(h.holdCount),
        h.since,
        duration(h.heldMs),
        duration(h.remainingLeaseMs),
        String(h.fencingToken),
      ]),
    ),
  );
  return lines.join('\n');
}

/** The `leaders` table: name, holder, term, since (and how long, lease left, standbys). */
export function formatLeaders(snapshot: BoardSnapshot, prefix: string): string {
  const where = `${printable(snapshot.keyPrefix)}${prefix ? ` whose name starts with "${printable(prefix)}"` : ''}`;
  if (snapshot.leaders.length === 0) return `no leader under ${where}.`;
  const rows = snapshot.leaders.map((l) => [
    printable(l.name),
    printable(`${l.owner}@${l.host}:${l.pid}${l.app ? ` (${l.app})` : ''}`),
    String(l.term),
    l.since,
    duration(l.heldMs),
    duration(l.remainingLeaseMs),
    String(l.standbys),
  ]);
  const lines = [table(['NAME', 'HOLDER', 'TERM', 'SINCE', 'FOR', 'LEASE', 'STANDBYS'], rows)];
  const summary = [`${snapshot.leaders.length} leader(s) under ${where}`];
  if (snapshot.more > 0) summary.push(`${snapshot.cut ? 'at least ' : ''}${snapshot.more} more, narrow the prefix`);
  for (const f of snapshot.failures) summary.push(`master ${f.master} could not be scanned: ${printable(f.error)}`);
  lines.push(`${summary.join('; ')}.`);
  return lines.join('\n');
}
