import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import ts from 'typescript';

/**
 * The emitted types are the package's public surface. Declarations are emitted as `npm run build` does
 * (tsconfig.build.json, `stripInternal`), then every `.d.ts` reachable from an entry point is read: each name it
 * imports from another file of the package must be a name some entry exports. So no signature can hand users a
 * type they cannot import, and no internal type sneaks into the surface through a public one.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRIES = ['index', 'health/index', 'testing/index'];

let out: string;
let program: ts.Program;

function emitDeclarations(): string {
  const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-dts-'));
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    { outDir: dir, emitDeclarationOnly: true },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('cannot read tsconfig.build.json');
  const result = ts.createProgram(config.fileNames, config.options).emit();
  const errors = result.diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) throw new Error(ts.formatDiagnostics(errors, ts.createCompilerHost(config.options)));
  return dir;
}

/** Relative imports of a `.d.ts`: `import { A } from './x.js'`, `export { A } from './x.js'`, `import('./x.js').A`. */
function importsOf(file: ts.SourceFile): { from: string; names: string[] }[] {
  const found: { from: string; names: string[] }[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const names: string[] = [];
      if (ts.isImportDeclaration(node)) {
        const bindings = node.importClause?.namedBindings;
        if (bindings && ts.isNamedImports(bindings))
          for (const e of bindings.elements) names.push((e.propertyName ?? e.name).text);
        if (node.importClause?.name) names.push('default');
      } else if (node.exportClause && ts.isNamedExports(node.exportClause)) {
        for (const e of node.exportClause.elements) names.push((e.propertyName ?? e.name).text);
      }
      found.push({ from: node.moduleSpecifier.text, names });
    }
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({
        from: node.argument.literal.text,
        names: node.qualifier ? [node.qualifier.getText(file).split('.')[0]] : [],
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found.filter((i) => i.from.startsWith('.'));
}

const resolveDts = (fromFile: string, specifier: string) =>
  resolve(dirname(fromFile), specifier.replace(/\.js$/, '.d.ts'));

describe('public API (emitted .d.ts)', () => {
  beforeAll(() => {
    out = emitDeclarations();
    const entries = ENTRIES.map((e) => join(out, `${e}.d.ts`));
    program = ts.createProgram(entries, { noEmit: true, skipLibCheck: true });
  }, 60_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  function publicNames(): Set<string> {
    const checker = program.getTypeChecker();
    const names = new Set<string>();
    for (const entry of ENTRIES) {
      const symbol = checker.getSymbolAtLocation(program.getSourceFile(join(out, `${entry}.d.ts`))!);
      for (const exported of checker.getExportsOfModule(symbol!)) names.add(exported.getName());
    }
    return names;
  }

  /** Every `.d.ts` an entry reaches, with the names it imports from other package files. */
  function reachable(): Map<string, { from: string; names: string[] }[]> {
    const seen = new Map<string, { from: string; names: string[] }[]>();
    const queue = ENTRIES.map((e) => join(out, `${e}.d.ts`));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      const source = ts.createSourceFile(file, ts.sys.readFile(file) ?? '', ts.ScriptTarget.Latest, true);
      const imports = importsOf(source);
      seen.set(file, imports);
      for (const i of imports) queue.push(resolveDts(file, i.from));
    }
    return seen;
  }

  it('no reachable declaration uses a type of the package that no entry point exports', () => {
    const exported = publicNames();
    const leaks: string[] = [];
    for (const [file, imports] of reachable()) {
      if (ENTRIES.some((e) => file === join(out, `${e}.d.ts`))) continue;
      for (const { from, names } of imports) {
        for (const name of names)
          if (!exported.has(name)) leaks.push(`${file.slice(out.length + 1)} uses ${name} from ${from}`);
      }
    }
    expect(leaks).toEqual([]);
  });

  it('exports the contract of DESIGN §2 and none of the engine’s machinery', () => {
    const exported = publicNames();
    for (const name of [
      'RedisLockModule',
      'LockService',
      'LockEngine',
      'WriteLocked',
      'ReadLocked',
      'Locked',
      'LockError',
      'LockHandle',
      'HoldState',
    ]) {
      expect(exported.has(name)).toBe(true);
    }
    // Event payloads: the map of events and the types of their fields (every payload's `kind` is a LockKind).
    for (const name of [
      'LockEvents',
      'LockEventName',
      'LockEventListener',
      'LockKind',
      'HeldTooLongEvent',
      'LockHolderIdentity',
      'DoubtReason',
    ]) {
      expect(exported.has(name)).toBe(true);
    }
    // The meter's parts the metrics use, the observable gauges (lock.holds, lock.waiters) included.
    for (const name of ['MeterLike', 'ObservableGaugeLike', 'ObservableResultLike', 'LOCK_METRICS']) {
      expect(exported.has(name)).toBe(true);
    }
    for (const name of [
      'Hold',
      'LockOwner',
      'LockStore',
      'RedisLockStore',
      'Watchdog',
      'WaitingRoom',
      'Acquirer',
      'HoldKeeper',
      'HoldDoubt',
      'LockRegistry',
      'LockInterceptor',
      'EngineActivity',
    ]) {
      expect(exported.has(name)).toBe(false);
    }
  });

  it('strips members marked @internal from the public classes', () => {
    const engine = ts.sys.readFile(join(out, 'locking/engine/lock-engine.d.ts')) ?? '';
    const service = ts.sys.readFile(join(out, 'nest/lock.service.d.ts')) ?? '';
    expect(engine).toContain('acquire(keys');
    for (const internal of [
      'acquireChecked',
      'runInOwnerScope',
      'runWithHandle',
      'instanceId',
      'LockStoreFactory',
      'activity',
    ]) {
      expect(engine).not.toContain(internal);
    }
    // The service is the engine plus Nest's lifecycle: every call is declared once, on the engine. Its `engine` getter
    // (the lock board reads from it) is internal: not in the declaration at all.
    expect(engine).toContain('acquirePermit(key');
    expect(service).toContain('class LockService extends LockEngine');
    expect(service).not.toContain('acquirePermit(key');
    expect(service).not.toMatch(/\bengine\b[;:(]/);
  });
});
