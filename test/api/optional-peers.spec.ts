import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HIDE = fileURLToPath(new URL('../fixtures/hide-packages.cjs', import.meta.url));
const OPTIONAL =
  '@nestjs/schedule,cron,@opentelemetry/api,@nestjs/terminus,iovalkey,redis,@redis/client,@valkey/valkey-glide';

/** Loads the built entry `entry` (ESM `import` or CommonJS `require`) with the optional peers impossible to find. */
async function load(kind: 'import' | 'require'): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, HIDE_PACKAGES: OPTIONAL };
  delete env.NODE_OPTIONS;
  const code =
    kind === 'import'
      ? `import('./dist/esm/index.js').then((m) => console.log(Object.keys(m).includes('ScheduledLock') && typeof m.LockService))`
      : `const m = require('./dist/cjs/index.js'); console.log(Object.keys(m).includes('ScheduledLock') && typeof m.LockService)`;
  const { stdout } = await run(process.execPath, ['-r', HIDE, '-e', code], { cwd: ROOT, env });
  return stdout.trim();
}

describe('optional peers are optional', () => {
  it('the main entry loads, ScheduledLock included, without @nestjs/schedule, cron, @opentelemetry/api, @nestjs/terminus or any client library but ioredis (ESM and CommonJS)', async () => {
    expect(await load('import')).toBe('function');
    expect(await load('require')).toBe('function');
  });

  it('the hiding works (so the test above can fail): requiring a hidden package fails', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HIDE_PACKAGES: OPTIONAL };
    delete env.NODE_OPTIONS;
    await expect(
      run(process.execPath, ['-r', HIDE, '-e', `require('@nestjs/schedule')`], { cwd: ROOT, env }),
    ).rejects.toThrow(/Cannot find module '@nestjs\/schedule'/);
    await expect(
      run(process.execPath, ['-r', HIDE, '--input-type=module', '-e', `await import('@nestjs/schedule')`], {
        cwd: ROOT,
        env,
      }),
    ).rejects.toThrow(/Cannot find package '@nestjs\/schedule'/);
  });

  it("@ScheduledLock finds the cron package through @nestjs/schedule when the application cannot reach it (pnpm's layout), ESM and CommonJS", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HIDE_PACKAGES: 'cron', HIDE_EXCEPT_FROM: '@nestjs/schedule' };
    delete env.NODE_OPTIONS;
    const check = (m: string) =>
      `(async () => { const m = ${m}; const t = await m.jobTiming({ kind: 'cron', cronTime: '*/5 * * * * *' }, 30000); ` +
      `console.log(t.problem ?? t.defaultHoldMs); })()`;
    for (const [flags, code] of [
      [
        ['--input-type=module'],
        `await import('cron').then(() => console.log('reachable'), () => console.log('hidden')); ${check(`await import('./dist/esm/schedule/job-schedule.js')`)}`,
      ],
      [
        [],
        `try { require('cron'); console.log('reachable') } catch { console.log('hidden') } ${check(`require('./dist/cjs/schedule/job-schedule.js')`)}`,
      ],
    ] as const) {
      const { stdout } = await run(process.execPath, ['-r', HIDE, ...flags, '-e', code], { cwd: ROOT, env });
      expect(stdout.trim().split('\n')).toEqual(['hidden', '5000']);
    }
  });

  it('without @opentelemetry/api, a start says nothing about metrics unless they were asked for, and then once', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HIDE_PACKAGES: '@opentelemetry/api' };
    delete env.NODE_OPTIONS;
    // Four starts in one process, as Nest logs them (debug included): two with the default, two asking for metrics.
    const code = `
      import { NestFactory } from '@nestjs/core';
      import { RedisLockModule } from './dist/esm/index.js';
      const lines = [];
      const at = (level) => (message) => lines.push(level + ' ' + message);
      const logger = { log: at('log'), warn: at('warn'), error: at('error'), debug: at('debug'), verbose: at('verbose'), fatal: at('fatal') };
      for (const metrics of [undefined, undefined, true, {}]) {
        const app = await NestFactory.createApplicationContext(
          RedisLockModule.forRoot({ redis: process.env.REDIS_URL, ...(metrics === undefined ? {} : { metrics }) }),
          { logger },
        );
        await app.close();
        lines.push('-- started and closed');
      }
      console.log(JSON.stringify(lines.filter((l) => /opentelemetry|metric|--/i.test(l))));
    `;
    const { stdout } = await run(process.execPath, ['-r', HIDE, '--input-type=module', '-e', code], { cwd: ROOT, env });
    const lines = JSON.parse(stdout.trim().split('\n').pop()!) as string[];
    expect(lines.slice(0, 2)).toEqual(['-- started and closed', '-- started and closed']);
    const asked = lines.slice(2).filter((l) => !l.startsWith('--'));
    expect(asked).toEqual([expect.stringMatching(/^warn .*@opentelemetry\/api is not installed/)]);
    expect(asked[0]).toContain('metrics');
  }, 60_000);
});
