// Checks the links of the project's Markdown: a relative link must name a file or folder that exists, and a link with
// a `#fragment` into a Markdown file (or the same document) must name one of its headings. Web links (http:, https:,
// mailto:) are not fetched.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT, anchors, links } from './markdown.js';
import type { Doc } from './markdown.js';

/** One line per broken link of `docs`, `<doc>:<line>: <target>: <why>`; nothing when every link resolves. */
export function brokenLinks(docs: readonly Doc[], root = ROOT): string[] {
  const problems: string[] = [];
  const texts = new Map(docs.map((d) => [d.path, d.text]));
  const anchorsOf = (path: string): Set<string> => {
    const text = texts.get(path) ?? readFileSync(join(root, path), 'utf8');
    return anchors(text);
  };
  for (const doc of docs) {
    for (const { target, line } of links(doc.text)) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [pathPart, fragment] = splitTarget(target);
      const path =
        pathPart === ''
          ? doc.path
          : normalize(join(dirname(doc.path), decodeURIComponent(pathPart))).replace(/\\/g, '/');
      const where = `${doc.path}:${line}: ${target}`;
      if (path.startsWith('..') || (!texts.has(path) && !existsSync(join(root, path)))) {
        problems.push(`${where}: no such file (${relative(root, join(root, path)) || path})`);
        continue;
      }
      if (fragment === undefined) continue;
      if (!path.endsWith('.md') || (!texts.has(path) && statSync(join(root, path)).isDirectory())) continue; // #L10 into source files: not checked
      if (!anchorsOf(path).has(decodeURIComponent(fragment)))
        problems.push(`${where}: no heading "#${fragment}" in ${path}`);
    }
  }
  return problems;
}

function splitTarget(target: string): [string, string | undefined] {
  const hash = target.indexOf('#');
  return hash < 0 ? [target, undefined] : [target.slice(0, hash), target.slice(hash + 1)];
}
