// `npm test` after tsc and eslint: provides a redis-server (REDIS_URL, or a throwaway one on a free
// loopback port), runs Jest in native ESM mode against it, then stops the server.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startRedisServer } from '../../tools/redis-server.mjs';

const require = createRequire(import.meta.url);
let server;
if (!process.env.REDIS_URL) {
  try {
    server = await startRedisServer();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
  process.env.REDIS_URL = server.url;
  console.log(`tests: redis-server started at ${server.url}`);
}

const jestBin = join(dirname(require.resolve('jest/package.json')), 'bin', 'jest.js');
// Jest's JSON summary, turned into one plain closing line that CI can read.
const summaryFile = join(mkdtempSync(join(tmpdir(), 'nest-redis-locks-jest-')), 'summary.json');
const child = spawn(process.execPath, [jestBin, '--json', `--outputFile=${summaryFile}`, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: {
    ...process.env,
    NODE_OPTIONS:
      `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules --disable-warning=ExperimentalWarning`.trim(),
  },
});
const stop = async () => {
  if (server) await server.stop();
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => child.kill(sig));
}
child.on('exit', async (code, signal) => {
  await stop();
  if (existsSync(summaryFile)) {
    const summary = JSON.parse(readFileSync(summaryFile, 'utf8'));
    console.log(`\ntests: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed`);
  }
  process.exit(code ?? (signal ? 1 : 0));
});
