/**
 * A worker's vendored SDK: the package file in <worker>/vendor/ and the one line of its
 * dependencies that names it by a relative path. A worker directory is what `svc worker add`
 * installs and what becomes one image (`svc build`, the docker runtime), so each carries its own
 * copy: it installs from any machine, any build context, with nothing outside it.
 *
 * - Python, requirements.txt: `./vendor/svc_sdk-<v>-py3-none-any.whl`. pip reads a path in a
 *   requirements file from the current directory, which is the worker's when svc installs it (the
 *   process runtime and the images run `pip install -r requirements.txt` there).
 * - TypeScript, package.json: `"svc-sdk": "file:vendor/svc-sdk-<v>.tgz"`, which npm reads from
 *   the package.json's own directory.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { VENDORED_SDK_FILE } from '../supervisor/install.js';
import { loadManifest } from '../supervisor/manifest.js';
import { sdkPackage, type SdkLanguage, type SdkPackage } from './sdk-packages.js';

export const VENDOR_DIR = 'vendor';

/**
 * A requirement line that names svc-sdk in any form: by name (with `@ url` or a version) or by a
 * wheel's path, either with extras (`svc-sdk[otel]`, `./vendor/svc_sdk-….whl[otel]`: the
 * OpenTelemetry export of docs/observability.md), which the rewritten line keeps.
 */
const PY_REQUIREMENT = /^[ \t]*(?:svc[-_]sdk(\[[^\]\n]*\])?(?:[ \t]*(?:@|[<>=!~]).*)?|\S*svc_sdk-[^/\s[]+\.whl(\[[^\]\n]*\])?)[ \t]*$/im;
/** The package file names each SDK's tool writes: any version of it. */
const PACKAGE_FILE: Record<SdkLanguage, RegExp> = VENDORED_SDK_FILE;

export interface VendorResult {
  dir: string;
  language: SdkLanguage;
  /** vendor/<file> */
  package: string;
  /** Older package files removed from vendor/. */
  removed: string[];
  /** requirements.txt or package.json */
  dependencyFile: string;
  /** What named svc-sdk before (null: nothing did) and what names it now. */
  before: string | null;
  after: string;
  /** Whether package-lock.json's integrity of the tarball was brought up to date (relock). */
  relocked: boolean;
  /** Whether anything on disk changed. */
  changed: boolean;
}

/** The reference a dependency file carries for the package `file` of vendor/. */
export function reference(language: SdkLanguage, file: string): string {
  return language === 'python' ? `./${VENDOR_DIR}/${file}` : `file:${VENDOR_DIR}/${file}`;
}

/** Put `pkg` into `dir`/vendor/ (removing other versions of it) and point the worker's dependencies at it. */
export function vendorSdk(dir: string, pkg: SdkPackage): VendorResult {
  const vendor = join(dir, VENDOR_DIR);
  mkdirSync(vendor, { recursive: true });
  const target = join(vendor, pkg.file);
  let changed = false;
  if (!existsSync(target) || !readFileSync(target).equals(readFileSync(pkg.path))) {
    copyFileSync(pkg.path, target);
    changed = true;
  }
  const removed = readdirSync(vendor).filter((f) => f !== pkg.file && PACKAGE_FILE[pkg.language].test(f));
  for (const f of removed) rmSync(join(vendor, f));
  const ref = pkg.language === 'python' ? pointRequirements(dir, pkg.file) : pointPackageJson(dir, pkg.file);
  const relocked = pkg.language === 'typescript' && relock(dir, pkg.file, target);
  return { dir, language: pkg.language, package: `${VENDOR_DIR}/${pkg.file}`, removed, ...ref, relocked, changed: changed || relocked || removed.length > 0 || ref.before !== ref.after };
}

/** Directories under `dir` holding an svc.worker.yaml (not inside dependencies, virtualenvs or dot-directories), sorted. */
export function findWorkerDirs(dir: string, depth = 4): string[] {
  const out: string[] = [];
  if (existsSync(join(dir, 'svc.worker.yaml'))) out.push(dir);
  if (depth === 0) return out;
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules' && e.name !== VENDOR_DIR) out.push(...findWorkerDirs(join(dir, e.name), depth - 1));
  }
  return out;
}

/**
 * Vendor the SDK of its language into each worker directory (its svc.worker.yaml's runtime.kind),
 * building the packages of this svc installation (`root`) as needed.
 */
export function vendorWorkers(dirs: string[], root: string): VendorResult[] {
  const packages = new Map<SdkLanguage, SdkPackage>();
  return dirs.map((dir) => {
    const language = loadManifest(dir).runtime.kind;
    if (!packages.has(language)) packages.set(language, sdkPackage(language, root));
    return vendorSdk(dir, packages.get(language)!);
  });
}

function pointRequirements(dir: string, file: string): { dependencyFile: string; before: string | null; after: string } {
  const path = join(dir, 'requirements.txt');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const m = PY_REQUIREMENT.exec(text);
  const after = reference('python', file) + (m?.[1] ?? m?.[2] ?? '');
  const before = m ? m[0].trim() : null;
  if (before !== after) {
    const next = m ? text.replace(PY_REQUIREMENT, after) : `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${after}\n`;
    writeFileSync(path, next);
  }
  return { dependencyFile: 'requirements.txt', before, after };
}

function pointPackageJson(dir: string, file: string): { dependencyFile: string; before: string | null; after: string } {
  const path = join(dir, 'package.json');
  const after = reference('typescript', file);
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '{}';
  const pkg = JSON.parse(text) as { dependencies?: Record<string, string> };
  const before = pkg.dependencies?.['svc-sdk'] ?? null;
  if (before !== after) {
    // The one string replaced in place keeps the file's layout; otherwise the file is rewritten.
    const spot = before === null ? [] : [...text.matchAll(new RegExp(`("svc-sdk"\\s*:\\s*)${escapeRegExp(JSON.stringify(before))}`, 'g'))];
    if (spot.length === 1) writeFileSync(path, text.replace(spot[0]![0], () => `${spot[0]![1]}${JSON.stringify(after)}`));
    else {
      pkg.dependencies = { ...pkg.dependencies, 'svc-sdk': after };
      const indent = /^[ \t]+(?=")/m.exec(text)?.[0] ?? '  ';
      writeFileSync(path, `${JSON.stringify(pkg, null, indent)}\n`);
    }
  }
  return { dependencyFile: 'package.json', before, after };
}

/**
 * package-lock.json records the vendored tarball's sha512. A new build of the same version (a newer
 * svc, a developer's checkout: the SDK's version does not move with every change) has other bytes
 * under the same name, and a plain `npm install` with the old lock, as an image build runs it
 * (`svc build`, the docker runtime), fails with EINTEGRITY. So the recorded integrity of that file
 * follows the file; the old value is replaced as text, keeping npm's layout. Returns whether it did.
 */
function relock(dir: string, file: string, tarball: string): boolean {
  const path = join(dir, 'package-lock.json');
  if (!existsSync(path)) return false;
  const text = readFileSync(path, 'utf8');
  let lock: { packages?: Record<string, { resolved?: string; integrity?: string }>; dependencies?: Record<string, { version?: string; integrity?: string }> };
  try {
    lock = JSON.parse(text) as typeof lock;
  } catch {
    return false; // not ours to repair: npm says what is wrong with it
  }
  const ref = reference('typescript', file);
  const entries = [lock.packages?.['node_modules/svc-sdk'], lock.dependencies?.['svc-sdk']].filter(
    (e): e is { integrity: string } => typeof e?.integrity === 'string' && ((e as { resolved?: string }).resolved === ref || (e as { version?: string }).version === ref),
  );
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const stale = [...new Set(entries.map((e) => e.integrity))].filter((i) => i !== integrity);
  if (stale.length === 0) return false;
  writeFileSync(path, stale.reduce((s, old) => s.split(JSON.stringify(old)).join(JSON.stringify(integrity)), text));
  return true;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
