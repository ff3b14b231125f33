import type { CommandArg, DriverNode, PipelineReply, RedisDriver } from './driver/redis-driver.js';
import { isReplyError } from './driver/reply-error.js';
import type { AcquireReply, ReplicaWaitSettings } from '../store/lock-store.js';
import type { LuaScript } from './scripts/lua-script.js';
import { slotOf } from './driver/slot.js';
import { isNoScript } from './error-code.js';

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
        ? describeRefusal(refused)
        : `${acked} of ${wanted} replica(s) acknowledged within waitForReplicas.timeoutMs (${timeoutMs} ms)`,
    );
    this.name = 'NotReplicated';
  }
}

/** Why `WAIT` was refused, and what to do about it. */
function describeRefusal(refused: unknown): string {
  const message = refused instanceof Error ? refused.message : 'an error reply';
  if (/^NOPERM/i.test(message)) {
    return (
      `the Redis user may not run WAIT or WAITAOF (${message}): grant it +wait (or +waitaof with ` +
      'waitForReplicas.aof; see "Redis permissions" in the README), or turn waitForReplicas off'
    );
  }
  if (/^ERR unknown command/i.test(message) && /waitaof/i.test(message)) {
    return `the server has no WAITAOF (${message}): it needs Redis 7.2+ or Valkey 7.2+; set waitForReplicas.aof to false (WAIT) for it`;
  }
  return `the server refused WAIT (${message}): a proxy or a managed Redis without replica acknowledgement; turn waitForReplicas off for it`;
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
  /** Replicas connected to each master (from `ROLE`), by node (`''` for a standalone or Sentinel master). */
  private readonly connected = new Map<string, number>();
  /** The server refused `ROLE` (Redis Enterprise, Azure): `INFO replication` tells the same, `connected_slaves`. */
  private roleRefused = false;

  constructor(
    private readonly driver: RedisDriver,
    readonly settings: ReplicaWaitSettings,
    private readonly load: (script: LuaScript) => Promise<void>,
    /** `false` once the server was found to run scripts only by `EVAL` (`ScriptGateway.useEval`). */
    private readonly byHash: () => boolean = () => true,
  ) {}

  /** Runs `script` then `WAIT` on the master of `keys[0]`. Rejects only when the script itself failed. */
  async run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<AckedReply> {
    const node = this.nodeOf(keys[0]);
    const wanted = await this.wanted(node, keys[0]);
    const tracksRole = this.settings.replicas === 'connected';
    const send = (byHash: boolean) => {
      const commands: CommandArg[][] = [
        byHash
          ? ['EVALSHA', script.sha, keys.length, ...keys, ...args]
          : ['EVAL', script.source, keys.length, ...keys, ...args],
        // WAITAOF 0 <replicas> <timeout>: the replicas' append-only files, not the master's own (numlocal 0).
        this.settings.aof ? ['WAITAOF', 0, wanted, this.settings.timeoutMs] : ['WAIT', wanted, this.settings.timeoutMs],
      ];
      // A pipeline goes to one node (on a Cluster, the master of its keys' slot): ROLE describes that master.
      if (tracksRole) commands.push(this.roleRefused ? ['INFO', 'replication'] : ['ROLE']);
      return this.driver.pipeline(commands, keys[0]);
    };
    const hashed = this.byHash();
    let results: PipelineReply[] = await send(hashed);
    if (hashed && isNoScript(results[0]?.[0])) {
      // Loaded (`SCRIPT LOAD`, kept by Redis 8, unlike a script sent with EVAL) and sent by SHA again; with EVAL only
      // if it is still unknown there.
      await this.load(script);
      results = await send(true);
      if (isNoScript(results[0]?.[0])) results = await send(false);
    }
    // On a Cluster, a pipeline whose script met MOVED/ASK (the slot moved) is not redirected by the client while its
    // WAIT succeeded on the old node: learn the new slot map and send it once more, to the slot's new master.
    if (this.driver.cluster && results[0]?.[0] instanceof Error && /^(MOVED|ASK) /.test(results[0][0].message)) {
      await this.driver.refreshSlots(this.settings.timeoutMs);
      results = await send(hashed);
    }
    const [[scriptErr, reply], [waitErr, acked], role] = results;
    if (scriptErr) throw scriptErr;
    if (role && !role[0]) this.noteRole(node, role[1]);
    else if (role && isReplyError(role[0])) this.roleRefused = true;
    if (waitErr) return { reply, acked: 0, wanted, refused: waitErr };
    // WAITAOF answers [local fsyncs, replicas' fsyncs]; WAIT the replicas.
    return { reply, acked: Number(Array.isArray(acked) ? acked[1] : acked), wanted };
  }

  /**
   * Start-up probe: `WAIT 0 0` answers at once on any Redis master; a proxy that refuses it is named here, once,
   * instead of on every call. Resolves with the refusal, or `undefined`. On a Cluster, every master is probed once
   * the client is ready.
   */
  async probe(): Promise<unknown> {
    if (this.driver.cluster) {
      return probeMasters(this.driver, this.settings.timeoutMs, (node) => this.waitNone(node));
    }
    try {
      await this.waitNone(this.driver.masters()[0]);
      if (this.settings.replicas === 'connected') await this.wanted('', undefined);
      return undefined;
    } catch (err) {
      return err;
    }
  }

  /** `WAIT 0 0` (or `WAITAOF 0 0 0`): answers at once on a master that has the command. */
  private waitNone(node: DriverNode): Promise<unknown> {
    return node.send(this.settings.aof ? ['WAITAOF', 0, 0, 0] : ['WAIT', 0, 0]);
  }

  /** The node a write to `key` goes to: the master of its slot on a Cluster, `''` otherwise. */
  private nodeOf(key: string | undefined): string {
    if (!this.driver.cluster || key === undefined) return '';
    return this.driver.masterOfSlot(slotOf(key)) ?? '';
  }

  /** How many replicas `WAIT` must count for a write to `key` on `node`. */
  private async wanted(node: string, key: string | undefined): Promise<number> {
    const { replicas } = this.settings;
    if (replicas !== 'connected') return replicas;
    const known = this.connected.get(node);
    if (known !== undefined) return known;
    if (this.driver.cluster && key !== undefined) {
      // ROLE has no key: pipelined behind a read of `key`, it reaches that key's master.
      const ask = () =>
        this.driver.pipeline([['EXISTS', key], this.roleRefused ? ['INFO', 'replication'] : ['ROLE']], key);
      let results = await ask();
      if (isReplyError(results[1]?.[0]) && !this.roleRefused) {
        this.roleRefused = true;
        results = await ask();
      }
      this.noteRole(node, results[1]?.[1]);
    } else {
      const master = this.driver.masters()[0];
      const role = this.roleRefused ? undefined : await master.send(['ROLE']).catch((err: unknown) => err);
      if (role === undefined || isReplyError(role)) {
        this.roleRefused = true;
        this.noteRole(node, await master.send(['INFO', 'replication']));
      } else {
        this.noteRole(node, role);
      }
    }
    return this.connected.get(node) ?? 0;
  }

  /** `ROLE` of a master (`['master', offset, [[host, port, offset], …]]`), or its `INFO replication` text. */
  private noteRole(node: string, role: unknown): void {
    if (Array.isArray(role) && role[0] === 'master' && Array.isArray(role[2])) this.connected.set(node, role[2].length);
    const count = typeof role === 'string' && /^role:master\r?$/m.test(role) && /^connected_slaves:(\d+)/m.exec(role);
    if (count) this.connected.set(node, Number(count[1]));
  }
}

/**
 * `WAIT 0 0` on every master of a Cluster once the client is ready (waiting for that at most `readyMs`): the first
 * refusal, or `undefined`. A Cluster that is not ready in time is not probed (its calls still find out).
 */
async function probeMasters(
  driver: RedisDriver,
  readyMs: number,
  waitNone: (node: DriverNode) => Promise<unknown>,
): Promise<unknown> {
  if (!(await driver.whenReady(readyMs))) return undefined;
  const refusals = await Promise.all(
    driver.masters().map((node) =>
      waitNone(node).then(
        () => undefined,
        (err: unknown) => err,
      ),
    ),
  );
  return refusals.find((err) => err !== undefined);
}
