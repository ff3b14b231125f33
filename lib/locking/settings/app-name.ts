import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

/** Where `defaultAppName` looks; the process's own values unless a test passes others. */
export interface AppNameSources {
  /** The environment; `npm_package_name` is read from it. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Path of the entry script (`process.argv[1]`), or `undefined` (a REPL, `node -e`). */
  readonly entry: string | undefined;
  /** The process title, the last resort. */
  readonly title: string;
}

/**
 * The default `appName` recorded with each hold (what `inspect`, the deadlock alarm and the board show as "which app
 * holds it"):
 * 1. `npm_package_name`, set when npm started the process (`npm start`, `npm run …`);
 * 2. else the `name` of the nearest `package.json` that has one, searching up from the entry script's folder: the
 *    app's own when it runs as `node dist/main.js`. An entry script inside `node_modules` (`nest start`, a test
 *    runner, a process manager's wrapper) is a tool's, so the search starts above the outermost `node_modules`;
 * 3. else the process title (`node` unless the app sets `process.title`).
 * Never throws: an unreadable or malformed `package.json` is skipped.
 */
export function defaultAppName(
  sources: AppNameSources = { env: process.env, entry: process.argv[1], title: process.title },
): string {
  const fromNpm = sources.env.npm_package_name;
  if (fromNpm) return fromNpm;
  const fromPackage = sources.entry === undefined ? undefined : nearestPackageName(sources.entry);
  return fromPackage ?? sources.title;
}

/** The `name` of the nearest named `package.json` at or above the folder of `entry` (see `defaultAppName`). */
function nearestPackageName(entry: string): string | undefined {
  let dir: string;
  try {
    dir = dirname(realpathSync(entry));
  } catch {
    return undefined; // not a file (e.g. `node -` reading stdin)
  }
  const inModules = dir.split(sep).indexOf('node_modules');
  if (inModules > 0) dir = dir.split(sep).slice(0, inModules).join(sep) || sep;
  for (;;) {
    const name = packageName(join(dir, 'package.json'));
    if (name !== undefined) return name;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The non-empty string `name` of the package.json at `file`, if it exists and has one. */
function packageName(file: string): string | undefined {
  try {
    const { name } = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown };
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined;
  }
}
