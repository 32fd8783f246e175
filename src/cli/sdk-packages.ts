/**
 * The svc SDKs as the packages a project vendors (vendor/ of each worker): the npm tarball that
 * `npm pack` makes of sdk/typescript and the wheel that `pip wheel` makes of sdk/python. They are
 * the packages a registry would serve, built by the registries' own tools, so a project installs
 * them with plain `npm install` / `pip install` on any machine, with no svc checkout present.
 *
 * Built on demand and kept in a cache keyed by the hash of what goes into them, so an unchanged
 * SDK is packed once per machine and a changed one (a developer's checkout) is packed again.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { SvcError } from 'svc-sdk';

export type SdkLanguage = 'python' | 'typescript';

export interface SdkPackage {
  language: SdkLanguage;
  version: string;
  /** The package's file name, as `npm pack` / `pip wheel` named it. */
  file: string;
  /** Absolute path of the file in the cache. */
  path: string;
}

export class SdkPackageError extends SvcError {
  constructor(message: string) {
    super('sdk_package_failed', message);
    this.name = 'SdkPackageError';
  }
}

/** What each package is built from: the paths (relative to sdk/<language>) its tool reads. */
const INPUTS: Record<SdkLanguage, string[]> = {
  python: ['pyproject.toml', 'README.md', 'LICENSE', 'src'],
  typescript: ['package.json', 'README.md', 'LICENSE', 'dist', 'src'],
};
/** Never part of a package: what running or checking the SDK in place leaves behind. */
const JUNK = /(^|\/)(__pycache__|\.mypy_cache|\.ruff_cache|\.pytest_cache|[^/]*\.egg-info|node_modules|\.venv[^/]*)(\/|$)/;

/** Where built packages are kept: $SVC_CACHE_DIR, else $XDG_CACHE_HOME/svc, else ~/.cache/svc. */
export function cacheDir(): string {
  const base = process.env.SVC_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'svc');
  return join(base, 'sdk-packages');
}

function inputFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  const abs = join(dir, rel);
  if (!existsSync(abs)) return out;
  if (!statSync(abs).isDirectory()) return [rel];
  for (const name of readdirSync(abs).sort()) {
    const r = rel ? `${rel}/${name}` : name;
    if (!JUNK.test(r)) out.push(...inputFiles(dir, r));
  }
  return out;
}

/** sha256 of the inputs' paths and bytes: the cache key. */
function inputsHash(language: SdkLanguage, dir: string): string {
  const h = createHash('sha256').update(`${language}\0`);
  for (const top of INPUTS[language]) for (const f of inputFiles(dir, top)) h.update(`${f}\0`).update(readFileSync(join(dir, f))).update('\0');
  return h.digest('hex').slice(0, 16);
}

function run(cmd: string, args: string[], cwd: string, what: string): void {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false', PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
  if (r.error) throw new SdkPackageError(`${what}: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new SdkPackageError(`${what}: \`${cmd} ${args.join(' ')}\` exited with ${r.status}:\n${`${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-15).join('\n')}`);
}

/** Build one package into `out` with the registry's own tool, from a copy of its inputs. */
function build(language: SdkLanguage, dir: string, out: string): void {
  const src = mkdtempSync(join(out, '..', `.src-${language}-`));
  try {
    for (const top of INPUTS[language]) {
      if (existsSync(join(dir, top))) cpSync(join(dir, top), join(src, top), { recursive: true, filter: (p) => !JUNK.test(relative(dir, p)) });
    }
    if (language === 'typescript') {
      if (!existsSync(join(src, 'dist', 'index.js'))) throw new SdkPackageError(`the TypeScript SDK at ${dir} is not built (no dist/index.js): run npm run build in the svc checkout`);
      run('npm', ['pack', '--pack-destination', out, '--ignore-scripts', '--silent'], src, 'packing the TypeScript SDK');
    } else {
      const python = process.env.SVC_PYTHON ?? 'python3';
      run(python, ['-m', 'pip', 'wheel', '--no-deps', '--quiet', '--wheel-dir', out, src], src, 'building the Python SDK wheel (needs python3 with pip, and PyPI for setuptools)');
    }
  } finally {
    rmSync(src, { recursive: true, force: true });
  }
}

/**
 * The package of one SDK of the svc installation at `root`, built when the cache has none for its
 * current inputs. Concurrent callers each build into a directory of their own; the first rename wins.
 */
export function sdkPackage(language: SdkLanguage, root: string): SdkPackage {
  const dir = join(root, 'sdk', language);
  const key = inputsHash(language, dir);
  const final = join(cacheDir(), `${language}-${key}`);
  if (!existsSync(final)) {
    mkdirSync(cacheDir(), { recursive: true });
    const tmp = mkdtempSync(join(cacheDir(), `.build-${language}-`));
    try {
      build(language, dir, tmp);
      try {
        renameSync(tmp, final);
      } catch (e) {
        if (!existsSync(final)) throw e;
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const ext = language === 'python' ? '.whl' : '.tgz';
  const file = readdirSync(final).find((f) => f.endsWith(ext));
  if (!file) throw new SdkPackageError(`the cache directory ${final} holds no ${ext} file; remove it and try again`);
  const version = language === 'python' ? /^svc_sdk-([^-]+)-/.exec(file)?.[1] : /^svc-sdk-(.+)\.tgz$/.exec(file)?.[1];
  return { language, version: version ?? 'unknown', file, path: join(final, file) };
}
