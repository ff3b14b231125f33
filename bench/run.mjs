// `npm run bench [-- --quick] [-- --only=uncontended,handoff]`: compiles the bench, the library and the sample
// app with tsconfig.bench.json into dist-bench/, starts a throwaway redis-server on a free loopback port, runs the
// bench against it, and stops the server whatever happens. Not part of `npm test`.
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedisServer } from '../tools/redis-server.mjs';

const require = createRequire(import.meta.url);
const root = dirname(dirname(fileURLToPath(import.meta.url)));

const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.bench.json'], {
  cwd: root,
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  console.error('bench: compiling with tsconfig.bench.json failed');
  process.exit(tsc.status ?? 1);
}

let server;
try {
  server = await startRedisServer();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
console.error(`bench: redis-server started at ${server.url}`);

const child = spawn(process.execPath, ['--expose-gc', 'dist-bench/bench/main.js', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, BENCH_REDIS_URL: server.url },
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', async (code, signal) => {
  await server.stop();
  process.exit(code ?? (signal ? 1 : 0));
});
