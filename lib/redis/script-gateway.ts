import { isNoScript, redisErrorCode } from './error-code.js';
import { isReplyError } from './driver/reply-error.js';
import type { RedisDriver } from './driver/redis-driver.js';
import type { AcquireReply, ReplicaWaitSettings } from '../store/lock-store.js';
import { sharded } from './scripts/lua-script.js';
import type { LuaScript } from './scripts/lua-script.js';
import { NotReplicated, ReplicaAcks } from './replica-wait.js';
import type { AckedReply } from './replica-wait.js';
import { ScriptBatcher } from './script-batcher.js';

/** What a `ScriptGateway` is made with. */
export interface ScriptGatewayOptions {
  /** On a Cluster, wake-ups go by sharded pub/sub: every script runs in its `SPUBLISH` variant (`sharded`). */
  readonly shardedPubSub: boolean;
  /** `waitForReplicas`: `write` follows a script with `WAIT` in the same round trip (`undefined`: off). */
  readonly waitForReplicas?: ReplicaWaitSettings;
  /**
   * Every script this gateway may send (base forms and their variants): a failure inside one is described with the
   * line of its source (`sourceOf`). Another kind of primitive passes its own scripts along with the lock scripts.
   */
  readonly scripts: readonly LuaScript[];
  /** Where a refusal of `WAIT` found at start-up is reported. */
  readonly onConnectionError: (err: unknown) => void;
  /**
   * How long a refusal of `WAIT` found by the probe waits to be reported, in milliseconds (default 0): a start-up
   * check that begins meanwhile reports it itself (`startupCheck`), so that it is said once.
   */
  readonly probeReportDelayMs?: number;
}

/**
 * The one place that sends scripts to one Redis deployment (standalone, Sentinel, Cluster, or one master of a
 * quorum), whatever they are for: by SHA with the `EVAL` fallback on NOSCRIPT, with the argument list laid out once,
 * in the Cluster (sharded pub/sub) variant when needed, batched per tick where batching is sound, and acknowledged
 * by the replicas when `waitForReplicas` is on. Knows nothing of what a script means: the stores encode KEYS/ARGV
 * and decode replies.
 */
export class ScriptGateway {
  /** `waitForReplicas`: scripts that write are followed by `WAIT` in the same round trip. */
  readonly acks: ReplicaAcks | undefined;
  /**
   * Whether calls of one script made in the same tick may go out as one batch call: on a standalone Redis (or
   * Sentinel, or each master of a quorum). Not on a Cluster (a batch would span slots), nor with `waitForReplicas`
   * (each write waits for its own acknowledgement).
   */
  readonly batches: boolean;
  private readonly sources: ReadonlyMap<string, string>;
  private readonly loading = new Map<string, Promise<void>>();
  private readonly shardedPubSub: boolean;
  /** The server cannot load scripts (`useEval`): each goes whole by `EVAL`. */
  private evalOnly = false;
  /** A start-up check began: it reports a refused `WAIT` itself. */
  private checked = false;

  constructor(
    readonly driver: RedisDriver,
    options: ScriptGatewayOptions,
  ) {
    this.shardedPubSub = options.shardedPubSub;
    this.sources = new Map(options.scripts.map((s) => [s.sha, s.source]));
    if (options.waitForReplicas) {
      const acks = new ReplicaAcks(
        driver,
        options.waitForReplicas,
        (script) => this.load(script),
        () => !this.evalOnly,
      );
      this.acks = acks;
      void acks.probe().then((refused) => {
        if (!refused || !isReplyError(refused)) return;
        // A start-up check fails the start-up on this refusal, but not on an ACL denial (NOPERM), which it leaves to
        // this report.
        const report = () => {
          if (!this.checked || isPermissionDenial(refused)) {
            options.onConnectionError(new NotReplicated(0, 0, 0, undefined, refused));
          }
        };
        setTimeout(report, options.probeReportDelayMs ?? 0).unref();
      });
    }
    this.batches = !this.acks && !driver.cluster;
  }

  /** A start-up check began: it says what it finds (a refused `WAIT` included), the probe need not. */
  startupCheck(): void {
    this.checked = true;
  }

  /**
   * From now on, scripts go whole by `EVAL`: the start-up check found a server that runs scripts but cannot load them
   * (`SCRIPT` renamed away or refused, or no `EVALSHA`), where each call by SHA would only meet NOSCRIPT first.
   */
  useEval(): void {
    this.evalOnly = true;
  }

  /** The source of the script with this SHA, for error messages (`undefined` for a script it does not know). */
  readonly sourceOf = (sha: string): string | undefined => this.sources.get(sha);

  /**
   * A batcher that sends the calls of `single` made in one tick as one call of `batch` (see `batched` in
   * scripts/lua-script.ts); `undefined` where batching does not apply (`batches`): the caller then uses `run`.
   */
  batcher(single: LuaScript, batch: LuaScript): ScriptBatcher | undefined {
    return this.batches ? new ScriptBatcher(single, batch, this.run) : undefined;
  }

  /** On a Cluster, the variant of `base` that wakes waiters by SPUBLISH (sharded pub/sub). */
  variant(base: LuaScript): LuaScript {
    return this.shardedPubSub ? sharded(base) : base;
  }

  /**
   * Runs `script` by SHA. When Redis answers NOSCRIPT (first use, restart, failover, `SCRIPT FLUSH`), the script is
   * loaded with `SCRIPT LOAD` and run by SHA again: a script sent with `EVAL` is one Redis 8 may evict (it keeps the
   * last 500 of those), one loaded is kept. Still unknown after that (the slot moved to a node that did not load it
   * meanwhile), it goes out once with `EVAL`.
   */
  readonly run = (base: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> => {
    const script = this.variant(base);
    if (this.evalOnly) return this.driver.eval(script.source, keys, args);
    return this.driver.evalsha(script.sha, keys, args).catch((err: unknown) => {
      if (!isNoScript(err)) throw err;
      return this.load(script).then(() =>
        this.driver.evalsha(script.sha, keys, args).catch((again: unknown) => {
          if (!isNoScript(again)) throw again;
          return this.driver.eval(script.source, keys, args);
        }),
      );
    });
  };

  /**
   * `SCRIPT LOAD` of `script` where it runs: the server, or every master of a Cluster (the caller's key may be on any).
   * One load at a time per script, shared by the callers that met NOSCRIPT together. A failed load is not an error
   * of its own: the retry by SHA says what is wrong.
   */
  load(script: LuaScript): Promise<void> {
    let loading = this.loading.get(script.sha);
    if (!loading) {
      const nodes = this.driver.masters();
      loading = Promise.allSettled(nodes.map((node) => node.send(['SCRIPT', 'LOAD', script.source]))).then(() => {
        this.loading.delete(script.sha);
      });
      this.loading.set(script.sha, loading);
    }
    return loading;
  }

  /**
   * A script that writes something a failover must not lose (a lease granted or moved on): with
   * `waitForReplicas`, followed by `WAIT`, and rejected with `NotReplicated` when too few replicas acknowledged.
   */
  async write(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (!this.acks) return this.run(script, keys, args);
    const acked = await this.acks.run(this.variant(script), keys, args);
    const short = this.shortfall(acked);
    if (short) throw short;
    return acked.reply;
  }

  /**
   * `script` followed by `WAIT` (with `waitForReplicas`), for a caller that decides from the reply whether it
   * needs the replicas (a refused acquisition changed nothing that matters): see `shortfall`.
   */
  runAcked(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<AckedReply> {
    // Without `waitForReplicas` there is nothing to wait for: no replica is wanted.
    if (!this.acks) return this.run(script, keys, args).then((reply) => ({ reply, acked: 0, wanted: 0 }));
    return this.acks.run(this.variant(script), keys, args);
  }

  /**
   * The failure for a write with too few acknowledgements (or a refused `WAIT`), carrying `granted`, the grant the
   * caller must undo; `undefined` when enough replicas acknowledged.
   */
  shortfall(acked: AckedReply, granted?: AcquireReply): NotReplicated | undefined {
    if (acked.refused === undefined && acked.acked >= acked.wanted) return undefined;
    return new NotReplicated(acked.acked, acked.wanted, this.acks?.settings.timeoutMs ?? 0, granted, acked.refused);
  }
}

function isPermissionDenial(err: unknown): boolean {
  return redisErrorCode(err) === 'NOPERM';
}
