/** A growable buffer of latency samples (milliseconds) that allocates nothing per sample on the hot path. */
export class Samples {
  private buf: Float64Array;
  private n = 0;

  constructor(capacity = 1 << 16) {
    this.buf = new Float64Array(capacity);
  }

  get count(): number {
    return this.n;
  }

  push(v: number): void {
    if (this.n === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = v;
  }

  /** Adds every sample of `other`. */
  merge(other: Samples): void {
    for (let i = 0; i < other.n; i++) this.push(other.buf[i]);
  }

  sum(): number {
    let s = 0;
    for (let i = 0; i < this.n; i++) s += this.buf[i];
    return s;
  }

  /** Percentiles by nearest rank, e.g. `percentiles([50, 99])`. NaN when empty. */
  percentiles(ps: readonly number[]): number[] {
    if (this.n === 0) return ps.map(() => Number.NaN);
    const sorted = this.buf.slice(0, this.n).sort();
    return ps.map((p) => sorted[Math.min(this.n - 1, Math.max(0, Math.ceil((p / 100) * this.n) - 1))]);
  }
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Contenders in the order of repetition `rep`: as listed on even repetitions, reversed on odd ones. */
export function orderFor<T>(items: readonly T[], rep: number): T[] {
  return rep % 2 === 0 ? [...items] : [...items].reverse();
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs a full GC when node was started with --expose-gc, so one measurement's garbage does not tax the next. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Node CPU time (user + system) used while `fn` ran, with its wall time, both in milliseconds. */
export async function withCpu<T>(fn: () => Promise<T>): Promise<{ result: T; cpuMs: number; wallMs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { result, cpuMs: (cpu.user + cpu.system) / 1000, wallMs };
}
