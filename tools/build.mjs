// `npm run build`: the package's two builds of lib/, side by side.
//   dist/esm  ES modules (tsconfig.build.json), for `import`;
//   dist/cjs  CommonJS (tsconfig.build.cjs.json), for `require`: the Nest 11 starter, ts-jest and other
//             CommonJS runtimes that cannot load ES modules. Its own package.json marks its .js files as
//             CommonJS inside a "type": "module" package.
//   dist/esm/cli/main.js is the `nest-redis-locks` command (package.json "bin"), with its shebang.
// Both carry declarations and source maps that point at lib/*.ts, which the package ships.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

function compile(project) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tsc -p ${project} failed (exit ${code})`))));
  });
}

rmSync(join(root, 'dist'), { recursive: true, force: true });
try {
  await Promise.all([compile('tsconfig.build.json'), compile('tsconfig.build.cjs.json')]);
} catch (err) {
  console.error(`build: ${err.message}`);
  process.exit(1);
}
mkdirSync(join(root, 'dist/cjs'), { recursive: true });
writeFileSync(join(root, 'dist/cjs/package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
// The `nest-redis-locks` command (package.json "bin"; npm makes it executable on install, this is for a checkout).
chmodSync(join(root, 'dist/esm/cli/main.js'), 0o755);
console.log('build: dist/esm (ES modules) and dist/cjs (CommonJS)');
