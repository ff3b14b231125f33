import { LockConfigError } from '../errors/lock-config.error.js';
import { LEADER_METADATA } from '../leader/leader-method.js';
import type { LeaderMethodSpec } from '../leader/leader-method.js';
import { leaderKey, resolveCampaignOptions } from '../leader/leader-options.js';
import type { CampaignOptions } from '../leader/leader.types.js';
import { wrapMethod } from './method-wrapper.js';

/**
 * Runs a provider method on one instance of the application at a time, for as long as that instance leads `name`:
 * once the application has started, every instance campaigns for `name` (the lock `leader:<name>`); the elected one
 * calls the method with its `Leadership` (`name`, `term`, `signal`, `since`). When the method returns or throws
 * (logged), the instance resigns and campaigns again after `restartDelayMs`; on shutdown `lead.signal` aborts, the
 * method is awaited and a standby takes over. Options are checked when the class is defined. Called by hand, the
 * method simply runs with what it is given. Needs `RedisLockModule` (docs/leader-election.md).
 *
 * @example
 * @Leader('outbox-relay')
 * async relay(lead: Leadership) {
 *   while (!lead.signal.aborted) await this.relayBatch(lead.term);
 * }
 */
export function Leader(name: string, options: CampaignOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    let spec: LeaderMethodSpec | undefined;
    const wrapper = wrapMethod('Leader', 'name', target, propertyKey, descriptor, (method, original) => {
      try {
        leaderKey(name);
        resolveCampaignOptions(name, options);
      } catch (err) {
        if (!(err instanceof LockConfigError)) throw err;
        throw new LockConfigError(`@Leader on ${method}: ${err.message}`, err.option, err.key);
      }
      spec = Object.freeze({ method, name, options: { ...options } });
      return (_wrapper, self, args) => original.apply(self, args);
    });
    Reflect.defineMetadata(LEADER_METADATA, spec, wrapper);
    return descriptor;
  };
}
