import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const pages = ['README.md', 'CHANGELOG.md', 'bench/README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's anchor of a heading: lower case, punctuation dropped (but `-` and `_`), spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown page: one per heading, repeated ones numbered as GitHub does. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '');
  for (const m of withoutCode.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every relative link of a page (outside code), with the target file and anchor. */
function links(page: string): { text: string; file: string; anchor: string | undefined }[] {
  const markdown = readFileSync(join(root, page), 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const out: { text: string; file: string; anchor: string | undefined }[] = [];
  for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1];
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [path, anchor] = target.split('#');
    out.push({ text: target, file: path === '' ? page : relative(root, resolve(root, dirname(page), path)), anchor });
  }
  return out;
}

describe('links of the README and the guides', () => {
  it('know GitHub anchors', () => {
    expect(slug('Fencing: the store must check reads too')).toBe('fencing-the-store-must-check-reads-too');
    expect(slug('Replica acknowledgement (`waitForReplicas`)')).toBe('replica-acknowledgement-waitforreplicas');
  });

  it.each(pages)('%s: every relative link points at a file that exists, and at a heading it has', (page) => {
    const broken = links(page).filter(({ file, anchor }) => {
      const path = join(root, file);
      if (!existsSync(path)) return true;
      if (anchor === undefined || !file.endsWith('.md')) return false;
      return !anchors(readFileSync(path, 'utf8')).has(anchor);
    });
    expect(broken.map((l) => l.text)).toEqual([]);
  });
});
