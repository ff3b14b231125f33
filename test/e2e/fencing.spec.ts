import { afterEach, describe, expect, it } from '@jest/globals';
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { ArticleWriterCommand, ArticleWriterMessage, ArticleWriterTask } from '../fixtures/article-writer.js';
import { until } from '../support/async.js';
import { RedisProcess } from '../support/faults.js';

const WRITER = fileURLToPath(new URL('../fixtures/article-writer.ts', import.meta.url));
const REGISTER_TS = fileURLToPath(new URL('../support/register-ts.mjs', import.meta.url));
const LEASE_MS = 1_000;

type MessageOf<T extends ArticleWriterMessage['type']> = Extract<ArticleWriterMessage, { type: T }>;

/** One process of test/fixtures/article-writer.ts: the sample's articles over HTTP, with gates in its PUT. */
class ArticleWriter {
  private readonly inbox: ArticleWriterMessage[] = [];
  private readonly child: ChildProcess;
  private port = 0;

  constructor(task: ArticleWriterTask) {
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the child
    this.child = fork(WRITER, [JSON.stringify(task)], {
      execArgv: ['--import', REGISTER_TS],
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m) => this.inbox.push(m as ArticleWriterMessage));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listening(): Promise<void> {
    this.port = (await this.next('listening', 20_000)).port;
  }

  /** The next message of `type`; throws on an `error` message, on exit, or after `timeoutMs`. */
  async next<T extends ArticleWriterMessage['type']>(type: T, timeoutMs = 10_000): Promise<MessageOf<T>> {
    await until(
      () => {
        const failure = this.inbox.find((m) => m.type === 'error');
        if (failure) throw new Error(`article writer ${this.pid} failed: ${(failure as MessageOf<'error'>).message}`);
        if (this.child.exitCode !== null || this.child.signalCode !== null)
          throw new Error(`article writer ${this.pid} exited`);
        return this.inbox.some((m) => m.type === type);
      },
      timeoutMs,
      `"${type}" from article writer ${this.pid}`,
    );
    return this.inbox.splice(
      this.inbox.findIndex((m) => m.type === type),
      1,
    )[0] as MessageOf<T>;
  }

  send(command: ArticleWriterCommand): void {
    this.child.send(command);
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGCONT (in case it is stopped) then `signal`, and waits for the exit; SIGKILL after 5 s. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const { child } = this;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT');
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

function put(writer: ArticleWriter, id: string, title: string): Promise<Response> {
  return fetch(`${writer.url}/articles/${id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ title, body: `written by ${title}` }),
  });
}

async function lockInfo(
  writer: ArticleWriter,
  key: string,
): Promise<{ held?: false; mode?: string; holders?: { pid: number; fencingToken: number }[] }> {
  return (await (await fetch(`${writer.url}/locks/${key}`)).json()) as never;
}

describe('sample app: fencing tokens refuse a late write from a holder whose lease ran out', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  }, 20_000);

  it('the paused holder gets 409, the newer holder’s write stands, and the late release frees nothing', async () => {
    const server = await RedisProcess.start({ add: (c) => cleanups.push(c) });
    const redis = new Redis(server.url);
    cleanups.push(() => redis.quit());
    const task: ArticleWriterTask = { url: server.url, leaseMs: LEASE_MS, holdAfterWrite: false };
    const [old, newer] = [new ArticleWriter(task), new ArticleWriter({ ...task, holdAfterWrite: true })];
    cleanups.push(
      () => old.stop(),
      () => newer.stop(),
    );
    await Promise.all([old.listening(), newer.listening()]);

    // The old holder takes the article's lock, then its process is frozen (a GC pause, a stopped VM) before it writes.
    const oldPut = put(old, '1', 'old holder');
    const { fencingToken: oldToken } = await old.next('holding');
    old.signal('SIGSTOP');

    // Its watchdog cannot renew: the lease runs out in Redis and the lock is free again.
    await until(
      async () => (await lockInfo(newer, 'article:1')).held === false,
      5 * LEASE_MS,
      'the frozen holder’s lease to run out',
    );

    // A newer holder takes the lock, writes, and keeps holding.
    const newerPut = put(newer, '1', 'newer holder');
    const { fencingToken: newerToken } = await newer.next('holding');
    expect(newerToken).toBeGreaterThan(oldToken);
    newer.send({ type: 'write' });
    await newer.next('written');

    // The old holder wakes up and writes with its old token: refused with 409.
    old.signal('SIGCONT');
    old.send({ type: 'write' });
    const refused = await oldPut;
    const body = (await refused.json()) as { message: string; fencingToken: number; lastFencingToken: number };
    expect({
      status: refused.status,
      fencingToken: body.fencingToken,
      lastFencingToken: body.lastFencingToken,
    }).toEqual({
      status: 409,
      fencingToken: oldToken,
      lastFencingToken: newerToken,
    });
    expect(body.message).toContain('a newer lock holder has read or written');

    // The old process releases its lock late: its handle after the handler, then explicitly by its owner token (which
    // reaches Redis whatever the handle knows), then on shutdown. None of it touches the newer holder's lock.
    old.send({ type: 'release', key: 'article:1' });
    expect((await old.next('released')).released).toBe(false);
    await old.stop('SIGTERM');
    const info = await lockInfo(newer, 'article:1');
    expect({ mode: info.mode, holders: info.holders?.map((h) => [h.pid, h.fencingToken]) }).toEqual({
      mode: 'write',
      holders: [[newer.pid, newerToken]],
    });
    expect(await redis.hget('articles:1', 'title')).toBe('newer holder');

    // The newer holder finishes normally; its write is what the article shows.
    newer.send({ type: 'finish' });
    const done = await newerPut;
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ id: '1', title: 'newer holder', version: 1 });
    expect(await redis.get('articles:1:fence')).toMatch(new RegExp(`^${newerToken}\\|`));
    expect(await lockInfo(newer, 'article:1')).toEqual({ key: 'article:1', held: false });
  }, 30_000);

  it('a holder frozen between its read and its write cannot lose the newer holder’s increment: its stale write is refused', async () => {
    const server = await RedisProcess.start({ add: (c) => cleanups.push(c) });
    const redis = new Redis(server.url);
    cleanups.push(() => redis.quit());
    const task: ArticleWriterTask = { url: server.url, leaseMs: LEASE_MS, holdAfterWrite: false, gate: 'read' };
    const [old, newer] = [new ArticleWriter(task), new ArticleWriter(task)];
    cleanups.push(
      () => old.stop(),
      () => newer.stop(),
    );
    await Promise.all([old.listening(), newer.listening()]);
    const like = (writer: ArticleWriter) => fetch(`${writer.url}/articles/1/likes`, { method: 'POST' });

    // The old holder reads the counter under the article's lock, then its process freezes before it writes.
    const oldLike = like(old);
    const oldRead = await old.next('read');
    old.signal('SIGSTOP');
    await until(
      async () => (await lockInfo(newer, 'article:1')).held === false,
      5 * LEASE_MS,
      'the frozen holder’s lease to run out',
    );

    // A newer holder takes the lock and reads the same value.
    const newerLike = like(newer);
    const newerRead = await newer.next('read');
    expect(newerRead.fencingToken).toBeGreaterThan(oldRead.fencingToken);
    expect(newerRead.value).toBe(oldRead.value);

    // The old holder wakes up and writes first: before any newer write, so only the newer read can tell the store.
    old.signal('SIGCONT');
    old.send({ type: 'write' });
    const oldAnswer = await oldLike;
    newer.send({ type: 'write' });
    const newerAnswer = await newerLike;

    // Every increment the store accepted is counted: none is lost.
    const accepted = [oldAnswer, newerAnswer].filter((r) => r.status === 200).length;
    expect({ old: oldAnswer.status, newer: newerAnswer.status }).toEqual({ old: 409, newer: 200 });
    expect(Number(await redis.get('articles:1:likes'))).toBe(accepted);
    expect(((await oldAnswer.json()) as { message: string }).message).toContain(
      'a newer lock holder has read or written',
    );
  }, 30_000);
});
