/** Number formatting shared by the tables. */
export const fmt = {
  int: (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '–'),
  num: (v: number) =>
    Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) : '–',
  ms: (v: number) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(3)) : '–'),
  ratio: (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : '–'),
  pct: (v: number) => (Number.isFinite(v) ? `${v.toFixed(v >= 10 ? 0 : 1)} %` : '–'),
};

/** A markdown table (readable as plain text too). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => (c ?? '').padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}
