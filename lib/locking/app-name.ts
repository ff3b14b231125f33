import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The application name recorded with each hold (what `inspect`, the deadlock alarm and the lock board show as
 * "which app holds it"): `npm_package_name` when started by npm, else the `name` of the nearest `package.json` above
 * the entry script (`node dist/main.js` in a project), else the process title.
 */
export function defaultAppName(env: NodeJS.ProcessEnv = process.env, entry: string | null = process.argv[1] ?? null): string {
  if (env.npm_package_name) return env.npm_package_name;
  if (entry) {
    for (let dir = dirname(resolve(entry)); ; dir = dirname(dir)) {
      const name = packageName(join(dir, 'package.json'));
      if (name) return name;
      if (dirname(dir) === dir) break;
    }
  }
  return process.title;
}

function packageName(file: string): string | undefined {
  try {
    const name = (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name;
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined;
  }
}
