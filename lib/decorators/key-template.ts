import { LockConfigError } from '../errors/lock-config.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import type { KeyResolver } from '../nest/locked-method.js';
import { validateLockKey } from '../store/lock-key.js';

/**
 * What a lock decorator accepts as its key: a template (`'article:<id>'`, `'<dto.author.id>'`, `'<0>'`), an
 * array of templates (a multi-key lock), or a function of the method's arguments returning key(s).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LockKeySpec = string | readonly string[] | ((...args: any[]) => string | readonly string[]);

const PLACEHOLDER = /<([^<>]*)>/g;

interface Part {
  readonly literal: string;
  readonly index?: number;
  readonly path?: readonly string[];
  readonly source?: string;
}

/**
 * @internal Compiles `spec` for `method` (e.g. `ArticlesController.update`) whose parameters are `params`. Unknown
 * names
 * throw `LockConfigError` now, at start-up, naming the method and listing its parameters.
 */
export function compileKeySpec(spec: LockKeySpec, params: readonly (string | null)[], method: string): KeyResolver {
  if (typeof spec === 'function') {
    return (args) => {
      const out: unknown = spec(...args);
      const list: readonly unknown[] = Array.isArray(out) ? (out as unknown[]) : [out];
      if (list.length === 0)
        throw new LockKeyError(`the key function on ${method} returned no key (an empty array)`, out);
      return list.map((k) => checked(k, method, 'the key function'));
    };
  }
  const templates: unknown = typeof spec === 'string' ? [spec] : spec;
  if (!Array.isArray(templates) || templates.length === 0 || templates.some((t) => typeof t !== 'string')) {
    throw new LockConfigError(
      `invalid lock key on ${method}: expected a template string, an array of them, or a function of the arguments`,
      'key',
    );
  }
  // Checked above: every template is a string.
  const compiled = (templates as readonly string[]).map((t) => compileTemplate(t, params, method));
  return (args) => compiled.map((render) => render(args));
}

function compileTemplate(
  template: string,
  params: readonly (string | null)[],
  method: string,
): (args: readonly unknown[]) => string {
  const parts: Part[] = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    const literal = template.slice(last, m.index);
    last = (m.index ?? 0) + m[0].length;
    const [head, ...path] = m[1].trim().split('.');
    let index: number;
    if (/^\d+$/.test(head)) {
      index = Number(head);
      if (params.length > 0 && index >= params.length) {
        throw new LockConfigError(
          `lock key template "${template}" on ${method}: <${m[1]}> refers to argument ${index}, ` +
            `but the method has ${params.length} parameter(s): ${listParams(params)}`,
          'key',
        );
      }
    } else {
      index = params.indexOf(head);
      if (index < 0) {
        throw new LockConfigError(
          `lock key template "${template}" on ${method}: unknown parameter <${head}>; the parameters are ${listParams(params)}`,
          'key',
        );
      }
    }
    if (path.some((p) => p.length === 0)) {
      throw new LockConfigError(`lock key template "${template}" on ${method}: malformed placeholder <${m[1]}>`, 'key');
    }
    parts.push({ literal, index, path, source: m[1] });
  }
  const tail = template.slice(last);
  if (parts.length === 0) {
    const fixed = checked(template, method, 'the key template');
    return () => fixed;
  }
  return (args) => {
    let key = '';
    for (const part of parts) {
      key += part.literal + render(valueAt(args[part.index!], part.path!), template, part.source!, method);
    }
    return checked(key + tail, method, `template "${template}"`);
  };
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let v = root;
  for (const p of path) {
    if (v === null || v === undefined) return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

function render(value: unknown, template: string, placeholder: string, method: string): string {
  const bad = (what: string) =>
    new LockKeyError(`cannot build lock key "${template}" on ${method}: <${placeholder}> is ${what}`, value);
  if (value === undefined) throw bad('missing (undefined)');
  if (value === null) throw bad('null');
  if (typeof value === 'string') {
    if (value.length === 0) throw bad('an empty string');
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw bad(`not a finite number (${value})`);
    return String(value);
  }
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  throw bad(
    `${Array.isArray(value) ? 'an array' : `of type ${typeof value}`}; use a property path such as <${placeholder}.id>`,
  );
}

function checked(key: unknown, method: string, origin: string): string {
  try {
    return validateLockKey(key);
  } catch (err) {
    if (err instanceof LockKeyError)
      throw new LockKeyError(`${err.message} (from ${origin} on ${method})`, err.value, err.key);
    throw err;
  }
}

function listParams(params: readonly (string | null)[]): string {
  if (params.length === 0) return '(none)';
  return params.map((p, i) => (p === null ? `<${i}> (unnamed)` : `<${p}>`)).join(', ');
}
