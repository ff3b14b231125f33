import type { CampaignOptions } from './leader.types.js';

/** Metadata key under which `@Leader` records its method's `LeaderMethodSpec`. */
export const LEADER_METADATA = Symbol.for('nest-redis-locks.leader');

/** What `@Leader` recorded about its method; the application campaigns for it once started. */
export interface LeaderMethodSpec {
  /** `Class.method`, for messages. */
  readonly method: string;
  readonly name: string;
  readonly options: CampaignOptions;
}
