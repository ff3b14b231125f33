import { LEADER_KEY_PREFIX } from '../../leader/leader-options.js';

/**
 * Which holds and waits the deadlock alarm (and the board's alarm highlights) report: every one but a leadership's
 * (`leader:<name>`), which lasts, and whose standbys wait, by design; a leadership only while a campaign of this
 * engine asked for it (`alarms: true`).
 */
export class AlarmScope {
  private readonly loud = new Map<string, number>();

  /** Whether the alarm reports a hold of, or a wait for, `key`. */
  covers(key: string): boolean {
    return !key.startsWith(LEADER_KEY_PREFIX) || this.loud.has(key);
  }

  /** Reports leadership `key` too, until the returned function is called (counted per caller). */
  include(key: string): () => void {
    this.loud.set(key, (this.loud.get(key) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.loud.get(key) ?? 1) - 1;
      if (left > 0) this.loud.set(key, left);
      else this.loud.delete(key);
    };
  }
}
