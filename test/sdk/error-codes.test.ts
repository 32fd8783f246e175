/**
 * docs/errors.md lists exactly the error codes the code can produce, and svc-sdk's ErrorCode is
 * exactly the protocol's part of that list (its Calls, Frames and Triggers tables).
 *
 * "Codes the code can produce" are found by reading the sources of the engine, the CLI, the
 * built-in workers and the console (src/, console/src/) and of both SDKs (sdk/typescript/src/,
 * sdk/python/src/), where a code is written in one of the forms svc's code uses to produce one:
 *
 *   new SvcError('code', …)   new StateError('code', …)   new HttpError(404, 'code', …)   (Python: SvcError("code", …))
 *   super('code', …)   super().__init__("code", …)   an SvcError subclass that always carries one code
 *   { code: 'code', … }   {"code": "code"}   readonly code = 'code'   error.code = 'code'
 *   type CronErrorCode = 'a' | 'b'   (code: 'a' | 'b')   the codes a class or function declares it produces
 *   ErrorCode.Timeout, ErrorCode.TIMEOUT   the protocol's list, in either SDK
 *   [431, 'headers_too_large', …]   an HTTP status and its code
 *   fail(`code: …`)   res.end(`code: …`)   `error: code: …`   a line that starts with its code
 *   abort('code', …)   refuse(502, 'code', …)   a function or method whose first parameter (after
 *                      `self` or an HTTP status) is named `code` (TypeScript, Python, Lua in a TS string);
 *                      a plain call counts in the file that defines it, a method call (`.abort(`) anywhere
 *
 * Comment lines are left out: a code named only in a comment is not one the code produces.
 * A new code written in another form is missed by the first check below, so write it in one of
 * these (an SvcError subclass is the usual way).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode } from 'svc-sdk';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SOURCES = ['src', 'console/src', 'sdk/typescript/src', 'sdk/python/src'];
const CODE = '[a-z][a-z0-9_]*';
const Q = `['"]`;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === '__pycache__' ? [] : files(path);
    return /\.(ts|tsx|py)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** A file's text with its comment lines (`//`, `#`, `--`, a block comment's `/*` and `*` lines) blanked, so line numbers hold. */
function withoutComments(text: string): string {
  return text.replace(/^[ \t]*(?:\/\/|\/\*|\*|#|--).*$/gm, '');
}

/**
 * Functions and methods that take an error code as their first parameter (after `self` or an HTTP
 * status): `abort(code: ChannelErrorCode, …)`, `const refuse = (status: number, code: string, …)`,
 * `def fail_all(self, code: str, …)`, Lua's `local function fail(code, i, detail)`.
 */
const CODE_PARAM = new RegExp(
  String.raw`(?:\bdef\s+|\bfunction\s+|^[ \t]*(?:(?:private|public|protected|async|static)\s+)*|\b(?:const|let)\s+)(\w+)\s*(?:=\s*(?:async\s*)?)?\(\s*(?:(?:self|status)\s*(?::\s*\w+)?\s*,\s*)?code\s*(?::\s*(?:string\b|str\b|\w*Code\b|'[^']*'(?:\s*\|\s*'[^']*')*)|,|\))`,
  'gm',
);

function codeTakers(texts: Map<string, string>): { local: Map<string, Set<string>>; methods: Set<string> } {
  const local = new Map<string, Set<string>>();
  const methods = new Set<string>();
  for (const [file, text] of texts) {
    for (const m of text.matchAll(CODE_PARAM)) {
      const name = m[1]!;
      if (['constructor', '__init__', 'super', 'if', 'for', 'while'].includes(name)) continue;
      local.set(file, (local.get(file) ?? new Set()).add(name));
      methods.add(name);
    }
  }
  return { local, methods };
}

/** Every code the sources produce, with where (file:line) it was first seen. */
function producedCodes(): Map<string, string> {
  return codesIn(new Map(SOURCES.flatMap((dir) => files(join(ROOT, dir))).map((file) => [file, readFileSync(file, 'utf8')])));
}

/** The codes these files (path → text) produce, with where each was first seen. */
function codesIn(sources: Map<string, string>): Map<string, string> {
  const found = new Map<string, string>();
  const tsNames = new Map(Object.entries(ErrorCode));
  const pyErrors = readFileSync(join(ROOT, 'sdk/python/src/svc_sdk/errors.py'), 'utf8');
  const pyNames = new Map([...pyErrors.matchAll(/^\s+([A-Z_]+) = "([a-z_]+)"$/gm)].map((m) => [m[1]!, m[2]!]));
  const singles = [
    new RegExp(`\\b(?:new\\s+)?[A-Z]\\w*Error\\(\\s*(?:\\d+\\s*,\\s*)?${Q}(${CODE})${Q}`, 'g'),
    new RegExp(`\\bsuper\\((?:\\)\\.__init__\\()?\\s*(?:\\d+\\s*,\\s*)?${Q}(${CODE})${Q}`, 'g'),
    // A property (`code: 'x'`, `"code": "x"`), not a ternary's `x.code : 'y'`; an assignment.
    new RegExp(`(?<![.\\w])code${Q}?\\s*:\\s*${Q}(${CODE})${Q}(?!\\s*\\|)`, 'g'),
    new RegExp(`\\bcode\\s*=\\s*${Q}(${CODE})${Q}`, 'g'),
    new RegExp(`\\[\\s*[1-5]\\d\\d\\s*,\\s*${Q}(${CODE})${Q}`, 'g'),
    // A line that starts with its code: the CLI's `fail(`worker_not_found: …`)` and `error: <code>: …`,
    // a plain-text HTTP answer (`res.end(`method_not_allowed: …`)`), a close reason.
    new RegExp(`(?:\\bfail\\(|\\.end\\(|\\.close\\([^,()]*,)\\s*[\`'"](${CODE}): `, 'g'),
    new RegExp(`[\`'"]error: (${CODE}): `, 'g'),
  ];
  const unions = [new RegExp(`\\btype \\w*Code\\s*=([^;]+);`, 'g'), new RegExp(`\\bcode\\??:\\s*((?:${Q}${CODE}${Q}\\s*\\|\\s*)+${Q}${CODE}${Q})`, 'g')];
  const texts = new Map([...sources].map(([file, text]) => [file, withoutComments(text)]));
  const takers = codeTakers(texts);
  const takerCall = takers.methods.size === 0 ? null : new RegExp(`(\\.)?\\b(${[...takers.methods].join('|')})\\(\\s*(?:\\d+\\s*,\\s*)?${Q}(${CODE})${Q}`, 'g');
  for (const [file, text] of texts) {
    const where = (index: number): string => `${relative(ROOT, file)}:${text.slice(0, index).split('\n').length}`;
    const add = (code: string | undefined, index: number): void => {
      if (code !== undefined && !found.has(code)) found.set(code, where(index));
    };
    for (const re of singles) for (const m of text.matchAll(re)) add(m[1], m.index);
    for (const re of unions) for (const m of text.matchAll(re)) for (const lit of m[1]!.matchAll(new RegExp(`${Q}(${CODE})${Q}`, 'g'))) add(lit[1], m.index);
    const names = file.endsWith('.py') ? pyNames : tsNames;
    for (const m of text.matchAll(/\bErrorCode\.([A-Za-z_]+)\b/g)) add(names.get(m[1]!), m.index);
    // A plain call of a code-taking function counts in its own file; a method call anywhere.
    if (takerCall) for (const m of text.matchAll(takerCall)) if (m[1] || takers.local.get(file)?.has(m[2]!)) add(m[3], m.index);
  }
  return found;
}

/** The codes in the first column of docs/errors.md's tables, by the section (## heading) they are in. */
function documentedCodes(): Map<string, Set<string>> {
  const bySection = new Map<string, Set<string>>();
  let section = '';
  let inCodeTable = false;
  for (const line of readFileSync(join(ROOT, 'docs/errors.md'), 'utf8').split('\n')) {
    if (line.startsWith('## ')) section = line.slice(3).trim();
    if (!line.startsWith('|')) {
      inCodeTable = false;
      continue;
    }
    const first = line.split('|')[1]!.trim();
    if (/^code$/i.test(first)) {
      inCodeTable = true;
      continue;
    }
    if (!inCodeTable || /^-+$/.test(first)) continue;
    const codes = bySection.get(section) ?? new Set<string>();
    for (const m of first.matchAll(/`([a-z][a-z0-9_]*)`/g)) codes.add(m[1]!);
    bySection.set(section, codes);
  }
  return bySection;
}

describe('error codes: docs/errors.md and the code agree', () => {
  const produced = producedCodes();
  const bySection = documentedCodes();
  const documented = new Set([...bySection.values()].flatMap((s) => [...s]));

  test('every code the code can produce is documented', () => {
    const missing = [...produced].filter(([code]) => !documented.has(code)).map(([code, where]) => `${code} (${where})`);
    assert.deepEqual(missing, [], 'codes produced but not in a table of docs/errors.md');
  });

  test('every documented code is one the code can produce', () => {
    const stale = [...documented].filter((code) => !produced.has(code));
    assert.deepEqual(stale, [], 'codes in docs/errors.md that no source produces');
  });

  test("svc-sdk's ErrorCode is the Calls, Frames and Triggers tables: the protocol's codes", () => {
    const protocol = new Set(['Calls (engine and SDKs)', 'Frames (engine `error` frames)', 'Triggers'].flatMap((s) => [...(bySection.get(s) ?? [])]));
    assert.ok(protocol.size > 20, `found the three tables (${protocol.size} codes)`);
    assert.deepEqual([...new Set(Object.values(ErrorCode))].sort(), [...protocol].sort());
  });

  test('the scan finds codes in each form it reads', () => {
    // One per form, so that a change that breaks a pattern fails here rather than silently.
    for (const code of ['invalid_expression', 'value_too_large', 'headers_too_large', 'route_conflict', 'docker_unavailable', 'console_unreachable', 'stale_worker', 'result_too_large', 'unknown_queue']) {
      assert.ok(produced.has(code), code);
    }
    assert.match(produced.get('connection_lost') ?? '', /\.(ts|py):\d+$/);
  });

  test('a code passed to a function whose parameter is `code` counts; one named in a comment does not', () => {
    const found = codesIn(
      new Map([
        [join(ROOT, 'src/a.ts'), "class C {\n  abort(code: ChannelErrorCode, message: string): void {}\n}\nconst refuse = (status: number, code: string, m: string): void => {};\nrefuse(502, 'code_b', 'x');\n// throw new SvcError('code_in_comment', 'x');\n"],
        [join(ROOT, 'src/b.ts'), "x.abort('code_a', 'y');\nrefuse(400, 'not_this_files_refuse', 'z');\n"],
        [join(ROOT, 'sdk/python/src/c.py'), 'def fail_all(self, code: str, message: str) -> None:\n    pass\nself.fail_all("code_c", "m")\n# raise SvcError("py_comment", "x")\n'],
        [join(ROOT, 'sdk/python/src/h.py'), 'class E(SvcError):\n    def __init__(self, message: str) -> None:\n        super().__init__("code_h", message)\n'],
        [join(ROOT, 'src/e.ts'), "fail(`code_e: no ${x}`, 2);\nres.end(`code_f: ${path} answers GET`);\nconst line = `error: code_g: ${m}`;\nthrow new Error(`node_id: ${v} is not valid`);\n"],
        [join(ROOT, 'src/d.ts'), "const LUA = `\nlocal function fail(code, i, detail) error({err = code}) end\nfail('code_d', i, 'x')\n-- fail('lua_comment', 0, '')\n`;\n"],
      ]),
    );
    assert.deepEqual([...found.keys()].sort(), ['code_a', 'code_b', 'code_c', 'code_d', 'code_e', 'code_f', 'code_g', 'code_h']);
    assert.equal(found.get('code_a'), 'src/b.ts:1');
  });
});
