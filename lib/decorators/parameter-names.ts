/**
 * Parameter names of a function, read from its source (compiled TypeScript keeps them). A destructured or
 * otherwise unnamed parameter yields `null`: it can only be addressed by position (`<0>`).
 */
export function parameterNames(fn: (...args: never[]) => unknown): (string | null)[] {
  const src = Function.prototype.toString.call(fn).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
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
  const inner = src.slice(open + 1, close);
  const parts: string[] = [];
  let current = '';
  depth = 0;
  for (const c of inner) {
    if (c === '(' || c === '[' || c === '{') depth++;
    if (c === ')' || c === ']' || c === '}') depth--;
    if (c === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  if (current.trim()) parts.push(current);
  return parts.map((part) => {
    const m = /^\s*(?:\.\.\.)?\s*([A-Za-z_$][\w$]*)\s*(?:=[\s\S]*)?$/.exec(part);
    return m ? m[1] : null;
  });
}
