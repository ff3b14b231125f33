import { performance } from 'node:perf_hooks';

/** How long a command may wait for its lane (`oneAtATime`), and the error when it waited too long. */
export interface LaneWaitLimit {
  /** performance.now() deadline. */
  readonly until: number;
  readonly error: () => Error;
}

/** Whether `p` settles by `until` (performance.now()); never rejects. */
export async function settlesBy(p: Promise<unknown>, until: number): Promise<boolean> {
  const ms = until - performance.now();
  if (ms <= 0) return false;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
