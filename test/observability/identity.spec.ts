import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LockTestKit, redisUrl, uniquePrefix, until } from '../support/lock-test-kit.js';

const LIBRARY = pathToFileURL(fileURLToPath(new URL('../../lib/index.ts', import.meta.url))).href;
const REGISTER_TS = fileURLToPath(new URL('../support/register-ts.mjs', import.meta.url));

describe('holder identity', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('names the app by its package.json when it was started with plain `node` (no npm_package_name)', async () => {
    // An app of its own, outside this repository, started as `node main.ts` the way `node dist/main.js` starts one.
    const dir = mkdtempSync(join(tmpdir(), 'identity-'));
    kit.add(async () => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'billing-api', private: true }));
    writeFileSync(
      join(dir, 'dist', 'main.ts'),
      [
        `import { LockEngine } from '${LIBRARY}';`,
        `const engine = new LockEngine({ redis: process.env.REDIS_URL!, keyPrefix: process.env.PREFIX });`,
        `await engine.acquire('identity');`,
        `console.log('held');`,
        `process.on('SIGTERM', () => void engine.close().then(() => process.exit(0)));`,
      ].join('\n'),
    );
    const prefix = uniquePrefix('identity');
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redisUrl(), PREFIX: prefix };
    delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the app
    delete env.npm_package_name; // as under `node dist/main.js`, a process manager or a container's entry point
    const child = spawn(process.execPath, ['--import', REGISTER_TS, join(dir, 'dist', 'main.ts')], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    kit.add(async () => {
      child.kill('SIGTERM');
      await exited;
    });

    await until(() => out.includes('held'), 20_000, 'the app to hold its lock');
    const info = await kit.engine({ keyPrefix: prefix }).inspect('identity');
    expect(info?.holders.map((h) => ({ app: h.app, pid: h.pid }))).toEqual([{ app: 'billing-api', pid: child.pid }]);
  }, 30_000);
});
