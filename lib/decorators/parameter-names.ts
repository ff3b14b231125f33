const IDENTIFIER = /^\s*(?:\.\.\.)?\s*([A-Za-z_$][\w$]*)\s*(?:=[\s\S]*)?$/;
const BARE_ARROW = /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/;
/** After these characters a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set([
  '',
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
]);

/**
 * Parameter names of a function, read from its source (compiled TypeScript keeps them). A destructured or
 * otherwise unnamed parameter yields `null`: it can only be addressed by position (`<0>`). Defaults may hold any
 * expression: strings, template literals, regular expressions and comments are skipped, so a `,` or `)` inside
 * them cannot shift the names.
 */
export function parameterNames(fn: (...args: never[]) => unknown): (string | null)[] {
  const src = blankLiterals(Function.prototype.toString.call(fn));
  const arrow = BARE_ARROW.exec(src);
  if (arrow && !src.trimStart().startsWith('(')) return [arrow[1]];
  const open = src.indexOf('(');
  if (open < 0) return [];
  let depth = 0;
  let close = -1;
  for (let i = open; i < src.length; i++) {
    const c = src[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) {
        close = i;
        break;
      }
    }
  }
  if (close < 0) return [];
  const parts: string[] = [];
  let current = '';
  depth = 0;
  for (const c of src.slice(open + 1, close)) {
    if (c === '(' || c === '[' || c === '{') depth++;
    if (c === ')' || c === ']' || c === '}') depth--;
    if (c === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  if (current.trim()) parts.push(current);
  return parts.map((part) => IDENTIFIER.exec(part)?.[1] ?? null);
}

/**
 * `src` with the contents of comments, string and template literals and regular expressions replaced by spaces
 * (quotes and delimiters kept), so brackets and commas can be counted on what is left.
 */
function blankLiterals(src: string): string {
  let out = '';
  let i = 0;
  let last = '';
  const blankUntil = (end: number) => {
    out += ' '.repeat(end - i);
    i = end;
  };
  while (i < src.length) {
    const c = src[i];
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i);
      blankUntil(end < 0 ? src.length : end);
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      blankUntil(end < 0 ? src.length : end + 2);
    } else if (c === '"' || c === "'" || c === '`') {
      out += c;
      i++;
      blankUntil(endOfQuoted(src, i, c));
      if (i < src.length) out += src[i++];
      last = c;
    } else if (c === '/' && BEFORE_REGEX.has(last)) {
      out += c;
      i++;
      blankUntil(endOfRegex(src, i));
      if (i < src.length) out += src[i++];
      last = '/';
    } else {
      out += c;
      i++;
      if (!/\s/.test(c)) last = c;
    }
  }
  return out;
}

/** Index of the quote closing a literal opened before `from` (template substitutions are skipped whole). */
function endOfQuoted(src: string, from: number, quote: string): number {
  let braces = 0;
  for (let i = from; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i++;
    else if (quote === '`' && c === '$' && src[i + 1] === '{') {
      braces++;
      i++;
    } else if (braces > 0 && c === '}') braces--;
    else if (braces === 0 && c === quote) return i;
  }
  return src.length;
}

/** Index of the `/` closing a regular expression opened before `from` (a `/` inside `[...]` does not close it). */
function endOfRegex(src: string, from: number): number {
  let inClass = false;
  for (let i = from; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i++;
    else if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    else if (c === '/' && !inClass) return i;
    else if (c === '\n') return i;
  }
  return src.length;
}
