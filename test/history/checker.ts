// The checker: runs every rule over a merged history and reports what it found by rule, with the offending events
// and the faults injected shortly before each finding.
import { checkConsistency, checkFencedWrites, checkHeldAfterClose, checkProgress } from './checker-more-rules.js';
import { HistoryModel } from './checker-model.js';
import { checkExclusion, checkFencing, checkPermits } from './checker-rules.js';
import type { Finding, RuleOptions } from './checker-rules.js';
import type { FaultEvent, HistoryEvent } from './history-events.js';

export type { Finding, RuleOptions } from './checker-rules.js';

export const DEFAULT_RULE_OPTIONS: RuleOptions = { toleranceMs: 2, settleMs: 4_000, expectedKeys: [] };

/** How far back a fault counts as "shortly before" a finding, in milliseconds. */
const NEAR_FAULT_MS = 5_000;

export interface CheckReport {
  /** Findings that fail the run. */
  readonly violations: readonly Finding[];
  /** Findings the docs name (reported by that name, not failed). */
  readonly excused: readonly Finding[];
  /** Operations by kind (`grant:lock:write`, `obs`, `write:done:accepted`, …). */
  readonly operations: Readonly<Record<string, number>>;
  /** Faults injected, by kind. */
  readonly faults: Readonly<Record<string, number>>;
}

export function checkHistory(events: readonly HistoryEvent[], options: Partial<RuleOptions> = {}): CheckReport {
  const opts = { ...DEFAULT_RULE_OPTIONS, ...options };
  const model = new HistoryModel(events);
  const findings = [
    ...checkExclusion(model, opts),
    ...checkPermits(model, opts),
    ...checkFencing(model),
    ...checkFencedWrites(model),
    ...checkHeldAfterClose(model),
    ...checkConsistency(model),
    ...checkProgress(model, opts),
  ].sort((a, b) => a.at - b.at);
  const faults: Record<string, number> = {};
  for (const f of model.faults) if (f.phase === 'begin') faults[f.kind] = (faults[f.kind] ?? 0) + 1;
  return {
    violations: findings.filter((f) => !f.excused),
    excused: findings.filter((f) => f.excused),
    operations: model.counts,
    faults,
  };
}

/** The faults that began within `NEAR_FAULT_MS` before `at` (or were still going on), e.g. `redis-restart-none`. */
export function faultsNear(events: readonly HistoryEvent[], at: number): string[] {
  const begun = events.filter((e): e is FaultEvent => e.e === 'fault' && e.phase === 'begin' && e.t <= at);
  return [...new Set(begun.filter((f) => at - f.t <= NEAR_FAULT_MS).map((f) => f.kind))];
}

/** Counts of findings by rule and by the faults shortly before them: `exclusion after worker-close: 2`. */
export function findingsByFault(events: readonly HistoryEvent[], findings: readonly Finding[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of findings) {
    const near = faultsNear(events, f.at);
    const label = `${f.rule}${f.excused ? ` (${f.excused})` : ''} after ${near.length ? near.join('+') : 'no fault'}`;
    out[label] = (out[label] ?? 0) + 1;
  }
  return out;
}

/** A readable report: counts, then each rule's first findings with their events (up to `perRule`). */
export function formatReport(report: CheckReport, events: readonly HistoryEvent[], seed: number, perRule = 3): string {
  const lines: string[] = [`seed ${seed} (HISTORY_SEED=${seed} reproduces the choices)`];
  const table = (title: string, counts: Readonly<Record<string, number>>) => {
    lines.push(`${title}:`);
    const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
    if (entries.length === 0) lines.push('  none');
    for (const [k, n] of entries) lines.push(`  ${k}: ${n}`);
  };
  table('faults injected', report.faults);
  table('operations', report.operations);
  table('violations by rule and fault', findingsByFault(events, report.violations));
  table('documented cases (not failed)', findingsByFault(events, report.excused));
  const byRule = new Map<string, Finding[]>();
  for (const f of report.violations) byRule.set(f.rule, [...(byRule.get(f.rule) ?? []), f]);
  for (const [rule, found] of byRule) {
    lines.push(`${rule}: ${found.length} violation(s); first ${Math.min(perRule, found.length)}:`);
    for (const f of found.slice(0, perRule)) {
      lines.push(`  [${f.key}] ${f.message} (faults shortly before: ${faultsNear(events, f.at).join(', ') || 'none'})`);
      for (const e of f.events) lines.push(`    ${JSON.stringify(e)}`);
    }
  }
  return lines.join('\n');
}
