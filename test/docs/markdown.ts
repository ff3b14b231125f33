// Reading the project's Markdown (README.md and the guides in docs/) for the documentation tests: fenced code blocks
// with their line numbers and markers, headings with the anchors GitHub gives them, and links.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root folder. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A Markdown document: its path relative to the root (with `/`), and its text. */
export interface Doc {
  readonly path: string;
  readonly text: string;
}

/** README.md and every docs/*.md, in a stable order: the documents whose code blocks the tests compile. */
export function projectDocs(root = ROOT): Doc[] {
  const guides = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return read(root, ['README.md', ...guides]);
}

/** The documents whose links the tests check: README.md and the guides, plus CHANGELOG.md and bench/README.md. */
export function linkedDocs(root = ROOT): Doc[] {
  return [...projectDocs(root), ...read(root, ['CHANGELOG.md', 'bench/README.md'])];
}

function read(root: string, paths: readonly string[]): Doc[] {
  return paths.map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}

/** A fenced code block. */
export interface CodeBlock {
  /** The info string's first word (`ts`, `bash`, …), lower case; `''` when there is none. */
  readonly lang: string;
  readonly code: string;
  /** Line number (1-based) in the document of the block's first line of code. */
  readonly line: number;
  /** The last non-blank line before the opening fence (where a `<!-- snippet: … -->` marker goes). */
  readonly before: string;
  /** The heading the block sits under (its text), or `''` before the first heading. */
  readonly section: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)/;

/** Every fenced code block of `text`, in order. */
export function codeBlocks(text: string): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(lines[i]);
    if (heading) section = heading[1];
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`).exec(lines[j]);
      if (close) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j]);
    }
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    blocks.push({
      lang: info.toLowerCase(),
      code: body.join('\n'),
      line: i + 2,
      before: k >= 0 ? lines[k].trim() : '',
      section,
    });
    i = j;
  }
  return blocks;
}

/** `text` with fenced code blocks blanked out (line numbers kept), for looking at the prose only. */
export function withoutCode(text: string): string {
  const lines = text.split('\n');
  for (const block of codeBlocks(text)) {
    const end = block.line - 1 + block.code.split('\n').length;
    for (let i = block.line - 2; i <= end && i < lines.length; i++) lines[i] = '';
  }
  return lines.join('\n');
}

/** The anchor GitHub gives a heading: its text as rendered, lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/[*`]/g, ''); // emphasis and code marks
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a link may point at in `text`: its headings' (numbered `-1`, `-2`… when repeated) and `<a id|name>`. */
export function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  const prose = withoutCode(text);
  for (const m of prose.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of prose.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(m[1]);
  return found;
}

/** A link of the prose: its target as written and the line it is on. */
export interface Link {
  readonly target: string;
  readonly line: number;
}

/** Every Markdown link and image target, and every reference definition, outside code blocks and inline code. */
export function links(text: string): Link[] {
  // Inline code blanked with spaces (offsets kept); link text may run over several lines.
  const prose = withoutCode(text).replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
  const lineAt = (index: number) => prose.slice(0, index).split('\n').length;
  const found: Link[] = [];
  for (const m of prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    found.push({ target: m[1], line: lineAt(m.index + m[0].lastIndexOf('(')) });
  }
  for (const m of prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm))
    found.push({ target: m[1], line: lineAt(m.index) });
  for (const m of prose.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g))
    found.push({ target: m[1], line: lineAt(m.index) });
  return found.sort((a, b) => a.line - b.line);
}
