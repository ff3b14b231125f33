import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import ts from 'typescript';
import { freePort, startRedisServer } from '../../tools/redis-server.mjs';
import { until } from '../support/async.js';
import { keysUnder } from '../support/redis.js';
import { QUICK_STARTS, quickStart, request, writeQuickStart } from './quick-start.js';
import { assertBuilt, consumerProject } from './snippets.js';

describe.each(QUICK_STARTS)('$doc "$section", run as written', ({ doc, section }) => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  }, 30_000);

  const q = quickStart(doc, section);

  it('is the shape it says: CommonJS as `nest new` makes it in the README, ESM in docs/consumers.md', () => {
    const tsconfig = JSON.parse(q.tsconfig ?? '{}') as { compilerOptions?: { module?: string } };
    const imports = q.files.flatMap((f) => [...f.block.code.matchAll(/from '(\.[^']*)'/g)].map((m) => m[1]));
    expect(imports.length).toBeGreaterThan(0);
    if (doc === 'README.md') {
      expect([q.type, tsconfig.compilerOptions?.module]).toEqual(['commonjs', 'commonjs']);
      expect(imports.filter((i) => i.endsWith('.js'))).toEqual([]); // as `nest new` writes them
    } else {
      expect([q.type, tsconfig.compilerOptions?.module]).toEqual(['module', 'nodenext']);
      expect(imports.filter((i) => !i.endsWith('.js'))).toEqual([]);
    }
  });

  it('has what a reader needs: install commands, tsconfig.json, the source files, a start command, a request and its answer', () => {
    expect(q.installed.length).toBeGreaterThan(0);
    expect(q.files.map((f) => f.file)).toEqual(expect.arrayContaining(['src/main.ts', 'src/app.module.ts']));
    expect({ tsconfig: !!q.tsconfig, run: q.run, curl: q.curl, answer: !!q.answer }).toEqual({
      tsconfig: true,
      run: expect.any(String),
      curl: expect.any(String),
      answer: true,
    });
  });

  it('installs every package its files import', () => {
    const imported = new Set(
      q.files.flatMap((f) =>
        [...f.block.code.matchAll(/^import\s+(?:[^'"]*\sfrom\s+)?['"]([^'"]+)['"]/gm)]
          .map((m) => m[1])
          .filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:'))
          .map((spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0])),
      ),
    );
    expect([...imported].filter((name) => !q.installed.includes(name))).toEqual([]);
  });

  it('compiles with its tsconfig.json; two instances serve the documented answer and lose no increment', async () => {
    assertBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-quick-start-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    consumerProject(dir, q.type === 'module' ? 'esm' : 'commonjs');
    writeQuickStart(q, dir);

    // `npx tsc`
    const config = ts.parseJsonConfigFileContent(JSON.parse(q.tsconfig!), ts.sys, dir);
    const program = ts.createProgram(config.fileNames, config.options);
    const emitted = program.emit();
    const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) =>
      ts.flattenDiagnosticMessageText(d.messageText, '\n'),
    );
    expect(problems).toEqual([]);

    // A Redis of its own, and two instances of the app: `node dist/main.js` with PORT set.
    const server = await startRedisServer();
    cleanups.push(() => server.stop());
    const { entry, method, path } = request(q);
    const ports = [await freePort(), await freePort()];
    const apps: ChildProcess[] = ports.map((port) => {
      const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), REDIS_URL: server.url };
      delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the app
      const child = spawn(process.execPath, [entry], { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] });
      cleanups.push(() => stop(child));
      return child;
    });
    for (const port of ports) {
      await until(
        () =>
          fetch(`http://127.0.0.1:${port}/`).then(
            () => true,
            () => false,
          ),
        30_000,
        `the app to listen on ${port}`,
      );
    }

    // The documented curl, against the first instance: the documented answer, byte for byte.
    const at = (port: number) => `http://127.0.0.1:${port}${path}`;
    const first = await fetch(at(ports[0]), { method });
    expect(await first.text()).toBe(q.answer);

    // "send requests to both at once: the count stays exact": 40 concurrent requests over the two instances.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(at(ports[i % 2]), { method }).then((r) => r.json() as Promise<{ likes: number }>),
      ),
    );
    const counts = answers.map((a) => a.likes).sort((a, b) => a - b);
    expect(counts).toEqual(Array.from({ length: 40 }, (_, i) => i + 2)); // each request saw its own count
    const redis = new Redis(server.url);
    cleanups.push(() => redis.quit());
    const id = path.split('/')[2];
    expect(await redis.get(`likes:${id}`)).toBe('41');

    // SIGTERM stops both (enableShutdownHooks), leaving no lock behind.
    await Promise.all(apps.map((child) => stop(child)));
    expect(await keysUnder(redis, 'lock:')).toEqual([]); // a key's fence tombstone (its last token) expires by itself
  }, 180_000);
});

/** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
