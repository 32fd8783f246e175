/**
 * Project scaffolding behind `svc create` and `svc project init`: copy a directory of templates/
 * into a new project, filling in the few values only known at scaffold time.
 *
 * A scaffolded project is self-contained: each worker carries the SDK of its language as a built
 * package in its vendor/ directory (vendor.ts), named by a relative path, so the project installs
 * on any machine with no svc checkout. The SDKs are packed from the svc checkout this CLI runs from,
 * found from this file's own location (compiled, dist/src/cli/scaffold.js, or from source).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, delimiter, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcError } from 'svc-sdk';
import { vendorWorkers, type VendorResult } from './vendor.js';

export const DEFAULT_TEMPLATE = 'quickstart';

/** Stable codes of the errors below (docs/errors.md); the commands exit 2 on all of them. */
export type ScaffoldErrorCode = 'unknown_template' | 'directory_not_empty' | 'not_a_directory' | 'invalid_worker_name';

export class ScaffoldError extends SvcError {
  declare readonly code: ScaffoldErrorCode;

  constructor(code: ScaffoldErrorCode, message: string) {
    super(code, message);
    this.name = 'ScaffoldError';
  }
}

/**
 * Never copied out of a template: what installing or running it in place leaves behind. Names
 * starting with '.' (.venv, .mypy_cache, …) are skipped too; a template stores its dotfiles under
 * the names in RENAMED, so that git and npm leave the template's own copies alone.
 */
const SKIPPED = new Set(['node_modules', '__pycache__', 'data', 'package-lock.json']);
const RENAMED: Record<string, string> = { _gitignore: '.gitignore' };

let cachedRoot: string | undefined;

/** The svc checkout this CLI runs from: the nearest ancestor holding templates/ and svc's package.json. */
export function svcRoot(): string {
  if (cachedRoot) return cachedRoot;
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'templates')) && isSvcPackage(join(dir, 'package.json'))) return (cachedRoot = dir);
    if (dirname(dir) === dir) throw new Error(`cannot find the svc checkout (a directory with templates/ and svc's package.json) above ${start}`);
  }
}

function isSvcPackage(file: string): boolean {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === 'svc';
  } catch {
    return false;
  }
}

/** Template names: the directories of templates/, sorted. */
export function listTemplates(root = svcRoot()): string[] {
  return readdirSync(join(root, 'templates'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** The template names for help texts; never throws (help must work even in a broken checkout). */
export function templateChoices(): string {
  try {
    return listTemplates().join(', ');
  } catch {
    return DEFAULT_TEMPLATE;
  }
}

/**
 * The values filled into `{{name}}` placeholders of a template's files. None names a path of this
 * machine: the SDK references are written by vendorWorkers once the files are in place.
 */
export function placeholderValues(target: string): Record<string, string> {
  return { project_name: basename(target) };
}

export interface ScaffoldOptions {
  template: string;
  /** The project directory; created when missing. */
  target: string;
  /** Write into a non-empty directory, replacing files the template also has. */
  force?: boolean;
}

export interface ScaffoldResult {
  template: string;
  target: string;
  root: string;
  /** Paths relative to target, in the order written. */
  files: string[];
  /** The subset of `files` that existed before (only with force). */
  overwritten: string[];
  /** The SDK package each worker got in its vendor/ (also listed in `files`). */
  vendored: VendorResult[];
}

export function scaffold(opts: ScaffoldOptions): ScaffoldResult {
  const root = svcRoot();
  const known = listTemplates(root);
  if (!known.includes(opts.template)) {
    throw new ScaffoldError('unknown_template', `unknown template ${JSON.stringify(opts.template)}; known templates: ${known.join(', ')}`);
  }
  const target = resolve(opts.target);
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) throw new ScaffoldError('not_a_directory', `${target} exists and is not a directory`);
    const present = readdirSync(target);
    if (present.length > 0 && !opts.force) {
      throw new ScaffoldError(
        'directory_not_empty',
        `${target} is not empty (${present.length} entr${present.length === 1 ? 'y' : 'ies'}, e.g. ${present.slice(0, 3).join(', ')}); choose another directory, or pass --force to write the template's files into it (files with the same names are replaced)`,
      );
    }
  }

  const values = placeholderValues(target);
  const source = join(root, 'templates', opts.template);
  const result: ScaffoldResult = { template: opts.template, target, root, files: [], overwritten: [], vendored: [] };
  for (const rel of templateFiles(source)) {
    const out = join(target, ...rel.split('/').map((part) => RENAMED[part] ?? part));
    const outRel = relative(target, out).split(sep).join('/');
    const raw = readFileSync(join(source, rel));
    // Text files get their placeholders filled; anything with a NUL byte is copied as is.
    const content = raw.includes(0) ? raw : fill(raw.toString('utf8'), values, rel.endsWith('.json'));
    if (existsSync(out)) result.overwritten.push(outRel);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, content, { mode: statSync(join(source, rel)).mode & 0o777 });
    result.files.push(outRel);
  }
  const workerDirs = [...new Set(result.files.filter((f) => f.endsWith(MANIFEST)).map((f) => join(target, dirname(f))))];
  result.vendored = vendorWorkers(workerDirs, root);
  for (const v of result.vendored) {
    const rel = relative(target, join(v.dir, v.package)).split(sep).join('/');
    if (!result.files.includes(rel)) result.files.push(rel);
  }
  result.files.sort();
  return result;
}

const MANIFEST = 'svc.worker.yaml';

/** Files of a template directory, relative and '/'-separated, sorted so output is stable. */
export function templateFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((x, y) => x.name.localeCompare(y.name))) {
    if (SKIPPED.has(e.name) || e.name.startsWith('.')) continue;
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...templateFiles(join(dir, e.name), rel));
    else if (e.isFile()) out.push(rel);
  }
  return out;
}

/** Replace `{{name}}` for every known name (other braces, e.g. in Python f-strings, stay as they are). */
export function fill(text: string, values: Record<string, string>, json: boolean): string {
  const names = Object.keys(values).join('|');
  return text.replace(new RegExp(`\\{\\{(${names})\\}\\}`, 'g'), (_, name: string) => {
    const v = values[name]!;
    // Inside a JSON string a path with a backslash or quote must be escaped.
    return json ? JSON.stringify(v).slice(1, -1) : v;
  });
}

/** What the commands print after scaffolding: the files, then the commands to run next. */
export function describeResult(r: ScaffoldResult, cwd = process.cwd()): string {
  const shown = relative(cwd, r.target) || '.';
  const cd = shown === '.' ? '' : shown.startsWith('..') ? r.target : shown;
  const lines = [`Created the ${r.template} project in ${r.target}:`];
  for (const f of r.files) lines.push(`  ${f}${r.overwritten.includes(f) ? '  (replaced)' : ''}`);
  const versions = [...new Set(r.vendored.map((v) => v.package.split('/').pop()!))].join(', ');
  lines.push('', `Each worker installs the svc SDK from its vendor/ directory (${versions}); \`svc sdk update\` refreshes it.`, '', 'Next:');
  const steps = [
    ...(cd ? [`cd ${quote(cd)}`] : []),
    'svc --config config.yaml            # the engine; leave it running, use a second terminal',
    'svc worker add svc-state',
    'svc worker add svc-http',
    'svc worker add ./workers/math-worker',
    'svc worker add ./workers/caller-worker',
    'svc trigger math::add a=2 b=3',
  ];
  lines.push(...steps.map((s) => `  ${s}`));
  lines.push('', 'README.md walks through every step.');
  if (!onPath('svc')) {
    lines.push(`(svc is not on your PATH: run \`npm link\` in ${r.root}, or use \`node ${join(r.root, 'bin', 'svc.js')}\` for svc.)`);
  }
  return lines.join('\n');
}

function quote(p: string): string {
  return /^[\w@%+=:,./-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`;
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((d) => d !== '' && existsSync(join(d, cmd)));
}
