/**
 * The shape of the code (issue 18's acceptance): no import cycle in src/ and sdk/, and no source
 * file over 500 lines there (TypeScript and Python). Each check also runs once on a small tree made
 * to fail it, so that a check that quietly sees nothing cannot pass.
 *
 * TypeScript: dependency-cruiser's `circular` rule over the JavaScript tsc built from each source
 * file (the graph that runs: imports of types only are erased). Python: the SDK package's imports,
 * read with Python's own parser (python-import-cycles.py).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const MAX_LINES = 500;
/** Where sources are, and where tsc puts the JavaScript of each. */
const TS_TREES = [
  { src: 'src', built: 'dist/src' },
  { src: 'sdk/typescript/src', built: 'sdk/typescript/dist' },
];
const PYTHON_PACKAGE = 'sdk/python/src/svc_sdk';
/** Not sources: what builds, installs and tests leave in the trees. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'build', '__pycache__', '.mypy_cache', '.pytest_cache', '.ruff_cache']);

function sourceFiles(dir: string, extensions: string[]): string[] {
  const out: string[] = [];
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        // Hidden directories (.venv, .iii-venv, caches) hold installed or generated files, not ours.
        if (!SKIPPED_DIRS.has(entry.name) && !entry.name.startsWith('.') && !entry.name.endsWith('.egg-info')) walk(join(at, entry.name));
      } else if (extensions.some((e) => entry.name.endsWith(e)) && !entry.name.endsWith('.d.ts')) {
        out.push(join(at, entry.name));
      }
    }
  };
  walk(dir);
  return out.sort();
}

function linesOf(file: string): number {
  const text = readFileSync(file, 'utf8');
  return text.length === 0 ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** Files over MAX_LINES, as "path: N lines", relative to `base`. */
function longFiles(dirs: string[], base: string): string[] {
  return dirs
    .flatMap((d) => sourceFiles(d, ['.ts', '.tsx', '.py']))
    .map((f) => ({ f, n: linesOf(f) }))
    .filter(({ n }) => n > MAX_LINES)
    .map(({ f, n }) => `${relative(base, f)}: ${n} lines`);
}

/** Import cycles among `files` (JavaScript), each as "a → b → … → a"; and how many modules were read. */
async function jsCycles(files: string[], base: string): Promise<{ modules: number; cycles: string[] }> {
  const result = await cruise(files, {
    validate: true,
    ruleSet: { forbidden: [{ name: 'no-circular', severity: 'error', from: {}, to: { circular: true } }] },
    doNotFollow: { path: 'node_modules' },
    baseDir: base,
  });
  const output = result.output as ICruiseResult;
  const cycles = new Set<string>();
  for (const v of output.summary.violations) {
    const path = (v.cycle ?? []).map((step) => (typeof step === 'string' ? step : step.name));
    cycles.add([v.from, ...path].join(' → '));
  }
  return { modules: output.summary.totalCruised, cycles: [...cycles].sort() };
}

function pythonCycles(packageDir: string): { modules: number; cycles: string[][] } {
  const script = join(ROOT, 'test/structure/python-import-cycles.py');
  return JSON.parse(execFileSync('python3', [script, packageDir], { encoding: 'utf8' })) as { modules: number; cycles: string[][] };
}

describe('no import cycles in src/ and sdk/', () => {
  test('TypeScript (the built JavaScript of every source file)', async () => {
    const files: string[] = [];
    for (const tree of TS_TREES) {
      for (const source of sourceFiles(join(ROOT, tree.src), ['.ts'])) {
        const built = join(tree.built, relative(join(ROOT, tree.src), source)).replace(/\.ts$/, '.js');
        assert.ok(existsSync(join(ROOT, built)), `${built} is missing: run npm run build first`);
        files.push(built);
      }
    }
    const { modules, cycles } = await jsCycles(files, ROOT);
    assert.ok(modules >= files.length, `read ${modules} modules of ${files.length}`);
    assert.deepEqual(cycles, [], `import cycles:\n${cycles.join('\n')}`);
  });

  test('Python (the svc_sdk package)', () => {
    const { modules, cycles } = pythonCycles(join(ROOT, PYTHON_PACKAGE));
    assert.ok(modules > 5, `read ${modules} modules`);
    assert.deepEqual(cycles, [], `import cycles: ${JSON.stringify(cycles)}`);
  });
});

test(`no source file over ${MAX_LINES} lines in src/ and sdk/`, () => {
  assert.ok(sourceFiles(join(ROOT, 'sdk/python'), ['.py']).length > 5, 'found the Python sources');
  assert.deepEqual(longFiles([join(ROOT, 'src'), join(ROOT, 'sdk')], ROOT), []);
});

describe('the checks fail on a tree that breaks them', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-structure-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a JavaScript cycle through three modules, and one of a module with itself', async () => {
    writeFileSync(join(dir, 'a.js'), "import { b } from './b.js';\nexport const a = () => b;\n");
    writeFileSync(join(dir, 'b.js'), "import { c } from './c.js';\nexport const b = () => c;\n");
    writeFileSync(join(dir, 'c.js'), "import { a } from './a.js';\nexport const c = () => a;\n");
    writeFileSync(join(dir, 'self.js'), "import * as self from './self.js';\nexport const s = () => self;\n");
    writeFileSync(join(dir, 'leaf.js'), "import { a } from './a.js';\nexport const leaf = a;\n");
    const { cycles } = await jsCycles(['a.js', 'b.js', 'c.js', 'self.js', 'leaf.js'], dir);
    assert.ok(cycles.includes('a.js → b.js → c.js → a.js'), cycles.join('\n'));
    assert.ok(cycles.includes('self.js → self.js'), cycles.join('\n'));
    assert.ok(!cycles.some((c) => c.startsWith('leaf.js')), 'a module that only imports into a cycle is not in it');
  });

  test('a Python cycle (relative and absolute imports); TYPE_CHECKING imports do not count', () => {
    const pkg = join(dir, 'pkg');
    mkdirSync(join(pkg, 'sub'), { recursive: true });
    writeFileSync(join(pkg, '__init__.py'), 'from .a import A\n');
    writeFileSync(join(pkg, 'a.py'), 'from .sub import b\nA = 1\n');
    writeFileSync(join(pkg, 'sub', '__init__.py'), '');
    writeFileSync(join(pkg, 'sub', 'b.py'), 'def f():\n    import pkg.a\n    return pkg.a\n');
    writeFileSync(join(pkg, 'typed.py'), 'from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .typed_back import T\n');
    writeFileSync(join(pkg, 'typed_back.py'), 'from .typed import TYPE_CHECKING\nT = 1\n');
    assert.deepEqual(pythonCycles(pkg).cycles, [['pkg.a', 'pkg.sub.b']]);
  });

  test('a file of 501 lines is named with its count; 500 pass', () => {
    const tree = join(dir, 'long');
    mkdirSync(join(tree, 'node_modules'), { recursive: true });
    writeFileSync(join(tree, 'ok.ts'), 'x;\n'.repeat(MAX_LINES));
    writeFileSync(join(tree, 'long.py'), 'x = 1\n'.repeat(MAX_LINES + 1));
    writeFileSync(join(tree, 'node_modules', 'dep.ts'), 'x;\n'.repeat(MAX_LINES + 1));
    assert.deepEqual(longFiles([tree], dir), [`long/long.py: ${MAX_LINES + 1} lines`]);
  });
});
