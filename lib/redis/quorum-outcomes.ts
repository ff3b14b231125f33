import { performance } from 'node:perf_hooks';
import { TIMED_OUT } from './redis-failures.js';

/** What one master's call gave: its answer, or its failure (`TIMED_OUT` when it did not answer in time). */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** A call that fewer than a majority of the masters answered. `describeFailure` turns it into a `LockUnavailableError`. */
export class QuorumFailure extends Error {
  constructor(
    /** Each master that failed: its label (`host:port`) and the error (or `TIMED_OUT`). */
    readonly failures: readonly { readonly master: string; readonly index: number; readonly error: unknown }[],
    readonly answered: number,
    readonly needed: number,
  ) {
    super(`quorum not reached: ${answered} master(s) answered, ${needed} needed`);
    this.name = 'QuorumFailure';
  }
}

/**
 * Each master's outcome, each bounded by `boundMs`, as soon as `decided` says the outcomes so far decide the call
 * (or every master settled). Masters still unsettled then are `undefined`.
 */
export function gather<T>(
  calls: readonly Promise<T>[],
  boundMs: number,
  decided: (outs: readonly (Outcome<T> | undefined)[], wakeAt: (at: number) => boolean) => boolean,
): Promise<(Outcome<T> | undefined)[]> {
  const outs: (Outcome<T> | undefined)[] = calls.map(() => undefined);
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      if (done) return;
      // `wakeAt(at)`: decided once `at` (performance.now()) has passed; until then, checked again at that time.
      const wakeAt = (at: number) => {
        if (performance.now() >= at) return true;
        if (!timer) timer = setTimeout(() => ((timer = undefined), check()), at - performance.now());
        return false;
      };
      if (decided(outs, wakeAt)) {
        done = true;
        clearTimeout(timer);
        resolve([...outs]);
      }
    };
    calls.forEach((call, i) => {
      void within(call, boundMs).then((o) => {
        outs[i] = o;
        check();
      });
    });
  });
}

/** `pending`'s outcome, or a failure with `TIMED_OUT` after `ms`. Never rejects. */
export function within<T>(pending: Promise<T>, ms: number): Promise<Outcome<T>> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false, error: TIMED_OUT }), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve({ ok: true, value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ ok: false, error });
      },
    );
  });
}

/** How many of `outs` (outcomes or plain answers) are, or answered, `value`. */
export function countOf<T>(outs: readonly (Outcome<T> | T | undefined)[], value: T): number {
  return outs.filter((o) => (isOutcome(o) ? o.ok && o.value === value : o === value)).length;
}

function isOutcome<T>(o: unknown): o is Outcome<T> {
  return typeof o === 'object' && o !== null && 'ok' in o;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
