// A signal that checks a deadline whenever it is read, used by lock holds and leaderships.

// The prototype's own getters, called on a signal whose instance properties `checkedOnRead` replaced.
const prototypeGetter = (name: 'aborted' | 'reason'): ((this: AbortSignal) => unknown) =>
  (Object.getOwnPropertyDescriptor(AbortSignal.prototype, name) as { get: (this: AbortSignal) => unknown }).get;
/** `AbortSignal.prototype.aborted`'s own getter: the state without running a `checkedOnRead` check. */
export const abortedOf = prototypeGetter('aborted') as (this: AbortSignal) => boolean;
const reasonOf = prototypeGetter('reason');

/**
 * Makes `signal` check `beforeRead` whenever it is read (`aborted`, `reason`, `throwIfAborted()`), so a deadline
 * that passed while no timer could run (a paused process, a blocked event loop) aborts it at the moment it is read,
 * not when the watchdog's timer next fires.
 */
export function checkedOnRead(signal: AbortSignal, beforeRead: () => void): AbortSignal {
  Object.defineProperties(signal, {
    aborted: {
      configurable: true,
      get(this: AbortSignal) {
        beforeRead();
        return abortedOf.call(this);
      },
    },
    reason: {
      configurable: true,
      get(this: AbortSignal) {
        beforeRead();
        return reasonOf.call(this);
      },
    },
    throwIfAborted: {
      configurable: true,
      value(this: AbortSignal) {
        beforeRead();
        AbortSignal.prototype.throwIfAborted.call(this);
      },
    },
  });
  return signal;
}
