import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * A peer dependency of the application, loaded when first needed rather than when the library is imported, so that
 * code that never needs it (the command-line tool, installed without the application's peers) loads without it.
 * Resolved as the application resolves it: from its entry script, else from the working directory.
 * @throws {Error} naming the package and what needs it, when it cannot be loaded.
 */
export function requirePeer<T>(name: string, neededFor: string): T {
  const bases = [process.argv[1], join(process.cwd(), 'package.json')].filter(
    (b): b is string => typeof b === 'string' && b !== '',
  );
  for (const base of bases) {
    try {
      return createRequire(base)(name) as T;
    } catch {
      // Try the next base.
    }
  }
  throw new Error(`${name} cannot be loaded; ${neededFor} needs it: install it (npm install ${name})`);
}
