/**
 * What a store's `describeFailure` is told when a call got no answer within the command timeout (`BoundedLockStore`
 * bounds every call; the quorum store uses it for a master that did not answer in time).
 */
export const TIMED_OUT: unique symbol = Symbol('timed out');
