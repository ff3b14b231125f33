import type { LuaScript } from './scripts/lua-script.js';

/** Items of one batch script call at most (6 keys and about 8 arguments each). */
const MAX_BATCH = 16;

/** Sends one script call (the gateway's `run`: EVALSHA, NOSCRIPT fallback, Cluster variant). */
export type ScriptRunner = (
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
) => Promise<unknown>;

interface BatchItem {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  readonly resolve: (reply: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Calls of one per-lock script made in the same tick, sent together: alone as `single`, several as one call of
 * `batch` (see `batched` in scripts/lua-script.ts). Flushed on `process.nextTick`, which runs once the promise jobs of
 * the
 * current turn have run, so callers resumed by the same batch of replies ask together. Made by
 * `ScriptGateway.batcher`, which knows when batching applies.
 */
export class ScriptBatcher {
  private items: BatchItem[] | undefined;
  /** Script calls of this batcher sent and not answered yet. */
  private inFlight = 0;

  constructor(
    private readonly single: LuaScript,
    private readonly batch: LuaScript,
    private readonly run: ScriptRunner,
  ) {}

  call(keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    // Nothing under way: a lone caller (one worker, a quiet process) goes out at once, with no deferral or batch.
    if (!this.items && this.inFlight === 0) {
      this.inFlight++;
      return this.run(this.single, keys, args).then(this.answered, this.failed);
    }
    return new Promise((resolve, reject) => {
      if (!this.items) {
        this.items = [];
        process.nextTick(this.flush);
      }
      this.items.push({ keys, args, resolve, reject });
    });
  }

  private readonly flush = () => {
    const items = this.items ?? [];
    this.items = undefined;
    for (let i = 0; i < items.length; i += MAX_BATCH) this.send(items.slice(i, i + MAX_BATCH));
  };

  private readonly answered = <T>(reply: T): T => {
    this.inFlight--;
    return reply;
  };

  private readonly failed = (err: unknown): never => {
    this.inFlight--;
    throw err;
  };

  private send(items: readonly BatchItem[]): void {
    this.inFlight++;
    if (items.length === 1) {
      const [item] = items;
      this.run(this.single, item.keys, item.args).then(this.answered, this.failed).then(item.resolve, item.reject);
      return;
    }
    const keys: string[] = [];
    const args: (string | number)[] = [items.length];
    for (const item of items) {
      keys.push(...item.keys);
      args.push(item.args.length, ...item.args);
    }
    this.run(this.batch, keys, args)
      .then(this.answered, this.failed)
      .then(
        (replies) => items.forEach((item, i) => item.resolve((replies as unknown[])[i])),
        (err: unknown) => items.forEach((item) => item.reject(err)),
      );
  }
}
