import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HIDE = fileURLToPath(new URL('../fixtures/hide-packages.cjs', import.meta.url));
const OPTIONAL = '@nestjs/schedule,cron,@opentelemetry/api,@nestjs/terminus';

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
  it('the main entry loads, ScheduledLock included, without @nestjs/schedule, cron, @opentelemetry/api or @nestjs/terminus (ESM and CommonJS)', async () => {
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
});
