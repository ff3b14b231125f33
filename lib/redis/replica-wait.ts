import { Cluster } from 'ioredis';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './connection.js';
import type { AcquireReply, ReplicaWaitSettings } from './lock-store.js';
import type { LuaScript } from './lua-scripts.js';
import { slotOf } from './sharded-channels.js';

/**
 * A write the master applied but too few replicas acknowledged within the wait (or the server refused `WAIT`).
 * `grantedReply` is the grant of an `acquire` that must now be undone: the caller releases it without re-sending.
 */
export class NotReplicated extends Error {
  constructor(
    readonly acked: number,
    readonly wanted: number,
    readonly timeoutMs: number,
    readonly grantedReply?: AcquireReply,
    readonly refused?: unknown,
  ) {
    super(
      refused
        ? `the server refused WAIT (${refused instanceof Error ? refused.message : 'an error reply'}): a proxy or a managed Redis without replica acknowledgement; turn waitForReplicas off for it`
        : `${acked} of ${wanted} replica(s) acknowledged within waitForReplicas.timeoutMs (${timeoutMs} ms)`,
    );
    this.name = 'NotReplicated';
  }
}

/** The grant an `acquire` failure carries when the store itself knows the attempt was granted. */
export function grantedReplyOf(failure: unknown): AcquireReply | undefined {
  return failure instanceof NotReplicated ? failure.grantedReply : undefined;
}

/** A script's reply and what `WAIT` said of it. */
export interface AckedReply {
  readonly reply: unknown;
  /** Replicas that acknowledged. */
  readonly acked: number;
  /** Replicas that had to. */
  readonly wanted: number;
  /** The server's error for `WAIT`, when it refused it. */
  readonly refused?: unknown;
}

/**
 * Scripts followed by `WAIT` in the same round trip (one pipeline: the script, `WAIT n timeout`, and for
 * `'connected'` a `ROLE` that tells how many replicas to wait for next time). `WAIT` blocks only this connection,
 * until the replicas confirmed every write the connection made so far, the script's included.
 */
export class ReplicaAcks {
  /** Replicas connected to the master (from `ROLE`); `undefined` until first asked. */
  private connected: number | undefined;

  constructor(
    private readonly client: RedisClient,
    readonly settings: ReplicaWaitSettings,
  ) {}

  /** Runs `script` then `WAIT` on the master of `keys[0]`. Rejects only when the script itself failed. */
  async run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<AckedReply> {
    const wanted = await this.wanted(keys[0]);
    const send = (byHash: boolean) => {
      const p: ChainableCommander = this.client.pipeline();
      if (byHash) p.evalsha(script.sha, keys.length, ...keys, ...args);
      else p.eval(script.source, keys.length, ...keys, ...args);
      p.wait(wanted, this.settings.timeoutMs);
      if (this.tracksRole()) p.role();
      return p.exec();
    };
    let results = await send(true);
    if (results?.[0]?.[0] instanceof Error && results[0][0].message.startsWith('NOSCRIPT')) results = await send(false);
    if (!results) throw new Error('the pipeline was discarded (connection closed)');
    const [[scriptErr, reply], [waitErr, acked], role] = results;
    if (scriptErr) throw scriptErr;
    if (role && !role[0]) this.noteRole(role[1]);
    if (waitErr) return { reply, acked: 0, wanted, refused: waitErr };
    return { reply, acked: Number(acked), wanted };
  }

  /**
   * Start-up probe: `WAIT 0 0` answers at once on any Redis master; a proxy that refuses it is named here, once,
   * instead of on every call. Resolves with the refusal, or `undefined`.
   */
  async probe(): Promise<unknown> {
    try {
      await this.client.wait(0, 0);
      if (this.tracksRole()) this.noteRole(await this.client.role());
      return undefined;
    } catch (err) {
      return err;
    }
  }

  /** How many replicas `WAIT` must count for a write to `key`. */
  private async wanted(key: string | undefined): Promise<number> {
    const { replicas } = this.settings;
    if (replicas !== 'connected') return replicas;
    if (this.client instanceof Cluster) {
      // The Cluster client's slot table lists the slot's master, then its replicas.
      const nodes = key === undefined ? undefined : this.client.slots[slotOf(key)];
      return nodes ? Math.max(0, nodes.length - 1) : 0;
    }
    if (this.connected === undefined) this.noteRole(await this.client.role());
    return this.connected ?? 0;
  }

  private tracksRole(): boolean {
    return this.settings.replicas === 'connected' && !(this.client instanceof Cluster);
  }

  /** `ROLE` of a master: `['master', offset, [[host, port, offset], …]]`. */
  private noteRole(role: unknown): void {
    if (Array.isArray(role) && role[0] === 'master' && Array.isArray(role[2])) this.connected = role[2].length;
  }
}
