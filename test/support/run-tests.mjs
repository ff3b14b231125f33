// `npm test` after tsc and eslint: provides a redis-server (REDIS_URL, or a throwaway one on a free
// loopback port), runs Jest in native ESM mode against it, then stops the server.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
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
const child = spawn(process.execPath, [jestBin, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: {
    ...process.env,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules --disable-warning=ExperimentalWarning`.trim(),
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
  process.exit(code ?? (signal ? 1 : 0));
});
