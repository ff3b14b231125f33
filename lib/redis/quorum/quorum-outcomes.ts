import { LockConfigError } from '../../errors/lock-config.error.js';
import { TIMED_OUT } from '../../store/timed-out.js';

/** What one master's call gave: its answer, or its failure (`TIMED_OUT` when it did not answer in time). */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/**
 * A call that fewer than a majority of the masters answered. `describeFailure` turns it into a `LockUnavailableError`.
 */
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

export function noop(): void {}

/** The outcome a suspect master counts as while it has not answered (see `QuorumMasters.gather`). */
export const SUSPECT: Outcome<never> = Object.freeze({ ok: false, error: TIMED_OUT });

/**
 * Throws the first master's refusal among `outcomes` (`LockConfigError`: e.g. a semaphore lives under the key there,
 * and that master changed nothing): a refusal answers the call, it is no failure to reach Redis.
 */
export function throwRefusal<T>(outcomes: readonly (Outcome<T> | undefined)[]): void {
  for (const o of outcomes) if (o && !o.ok && o.error instanceof LockConfigError) throw o.error;
}
