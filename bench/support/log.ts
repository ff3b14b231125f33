/** Progress lines go to stderr so that stdout carries only the result tables. */
export type Log = (line: string) => void;

export function makeLog(): Log {
  const t0 = performance.now();
  return (line) =>
    process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
}
