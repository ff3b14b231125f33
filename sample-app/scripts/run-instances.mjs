// `npm run start:cluster`: several instances of the compiled sample app sharing one Redis, to watch the locks
// work across processes. Starts a redis-server of its own unless REDIS_URL is set, then one instance per port
// in PORTS (default 3001,3002,3003), prints their URLs and a curl example, and stops everything on Ctrl-C.
// Expects the app compiled to dist-sample/ (`npm run build:sample`; `start:cluster` does it first).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startRedisServer } from '../../tools/redis-server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const main = join(root, 'dist-sample/sample-app/main.js');
/** How long an instance may take to start listening, in milliseconds. */
const START_TIMEOUT_MS = 20_000;
/** How long an instance may take to shut down after SIGTERM before it is killed, in milliseconds. */
const STOP_TIMEOUT_MS = 5_000;

function parsePorts(text) {
  const ports = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map(Number);
  if (
    ports.length === 0 ||
    ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65_535) ||
    new Set(ports).size !== ports.length
  ) {
    throw new Error(`PORTS must be a comma-separated list of distinct TCP ports, e.g. 3001,3002,3003 (got "${text}")`);
  }
  return ports;
}

/** Starts one instance; resolves once it logs that it listens, rejects if it exits first. */
function startInstance(port, redisUrl) {
  const child = spawn(process.execPath, [main], {
    cwd: root,
    env: { ...process.env, PORT: String(port), REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const instance = { port, url: `http://127.0.0.1:${port}`, child };
  const ready = new Promise((resolveReady, rejectReady) => {
    const timer = setTimeout(
      () => rejectReady(new Error(`instance on port ${port} did not start in ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const onLine = (line) => {
      console.log(`[${port}] ${line}`);
      if (line.includes('listening on')) {
        clearTimeout(timer);
        resolveReady(instance);
      }
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', (line) => console.error(`[${port}] ${line}`));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      rejectReady(new Error(`instance on port ${port} exited (${signal ?? `code ${code}`}) before it was ready`));
    });
  });
  return { instance, ready };
}

/** SIGTERM (the app has shutdown hooks), SIGKILL if it is still running after STOP_TIMEOUT_MS. */
function stopInstance({ child }) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

function printUsage(instances) {
  const [first, second = first, third = second] = instances.map((i) => i.url);
  const ports = instances.map((i) => i.port);
  console.log('');
  console.log(`${instances.length} instance(s) of the articles sample share one Redis:`);
  for (const { url } of instances) console.log(`  ${url}`);
  console.log('');
  console.log('Try it:');
  console.log(
    `  curl -X PUT ${first}/articles/1 -H 'content-type: application/json' -d '{"title":"Hello","body":"locks"}'`,
  );
  console.log(`  ports=(${ports.join(' ')}); for i in $(seq 0 299); do`);
  console.log('    curl -s -o /dev/null -X POST http://127.0.0.1:${ports[i % ${#ports[@]}]}/articles/1/likes &');
  console.log('  done; wait');
  console.log(`  curl ${second}/articles/1        # "likes": 300, whichever instances served the requests`);
  console.log(`  curl ${third}/locks/article:1    # who holds the lock, who waits`);
  console.log('  (the same loop against /articles/2/unsafe-likes, which takes no lock, ends below 300)');
  console.log('');
  console.log('Ctrl-C stops everything.');
}

async function run() {
  const ports = parsePorts(process.env.PORTS ?? '3001,3002,3003');
  if (!existsSync(main)) {
    throw new Error(
      `${main} not found: compile the sample app first with \`npm run build:sample\` (or use \`npm run start:cluster\`)`,
    );
  }

  let redisServer;
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    redisServer = await startRedisServer();
    redisUrl = redisServer.url;
    console.log(`REDIS_URL not set: started a redis-server at ${redisUrl}`);
  }

  const instances = [];
  let stopping;
  const stopAll = (exitCode) => {
    stopping ??= (async () => {
      await Promise.all(instances.map(stopInstance));
      await redisServer?.stop();
      process.exit(exitCode);
    })();
    return stopping;
  };
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (!stopping)
        console.log(
          `\n${signal}: stopping ${instances.length} instance(s)${redisServer ? ' and the redis-server' : ''}`,
        );
      stopAll(0);
    });
  }

  try {
    const started = ports.map((port) => startInstance(port, redisUrl));
    instances.push(...started.map((s) => s.instance));
    await Promise.all(started.map((s) => s.ready));
  } catch (err) {
    console.error(err.message);
    await stopAll(1);
  }

  // An instance that dies while the others run leaves a misleading demo: stop them all.
  for (const instance of instances) {
    instance.child.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(`instance on port ${instance.port} exited (${signal ?? `code ${code}`}); stopping the others`);
      stopAll(1);
    });
  }
  printUsage(instances);
}

run().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
