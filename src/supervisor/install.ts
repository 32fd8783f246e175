import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { guardedCommand } from './liveness-guard.js';
import type { Manifest } from './manifest.js';
import { groupRuns, killGroup, processStartToken } from './process-identity.js';
import { SvcError } from 'svc-sdk';

/**
 * Installing a worker's dependencies: Python workers into their own virtual environment
 * (`<dir>/.venv`), TypeScript workers with npm into `<dir>/node_modules`. Skipped when the
 * dependency files, and the svc SDK package the worker vendors, hash to what the last successful
 * install recorded.
 *
 * The SDKs' version stays 0.1.0 while their code changes (a new svc, a developer's checkout), and
 * pip and npm keep a package they installed at the same version: pip says it is already installed,
 * npm reinstalls it from its cache by the integrity package-lock.json recorded, even with
 * node_modules removed. So when the vendored package's bytes differ from the ones the environment
 * was installed with, it is installed again explicitly (refreshSdk).
 */

export class InstallError extends SvcError {
  constructor(message: string) {
    super('install_failed', message);
    this.name = 'InstallError';
  }
}

const DEP_FILES: Record<Manifest['runtime']['kind'], string[]> = {
  python: ['requirements.txt', 'pyproject.toml'],
  typescript: ['package.json', 'package-lock.json'],
};

/** The svc SDK package files a worker vendors (src/cli/vendor.ts), in `<dir>/vendor/`. */
export const VENDORED_SDK_FILE: Record<Manifest['runtime']['kind'], RegExp> = { python: /^svc_sdk-[^-]+-.*\.whl$/, typescript: /^svc-sdk-.+\.tgz$/ };
/** How the dependency file names a vendored package (vendor.ts `reference`). */
const SDK_REFERENCE: Record<Manifest['runtime']['kind'], (file: string) => string> = { python: (f) => `./vendor/${f}`, typescript: (f) => `file:vendor/${f}` };

function envDir(m: Manifest): string {
  return m.runtime.kind === 'python' ? join(m.dir, '.venv') : join(m.dir, 'node_modules');
}

function markerFile(m: Manifest): string {
  return join(envDir(m), '.svc-install-hash');
}

/** Records the hash of the vendored SDK package the environment was last installed with. */
function sdkMarkerFile(m: Manifest): string {
  return join(envDir(m), '.svc-sdk-hash');
}

/** The vendored SDK package that the worker's dependency file names, and the hash of its bytes; null if none. */
function vendoredSdk(m: Manifest): { file: string; hash: string } | null {
  const vendor = join(m.dir, 'vendor');
  if (!existsSync(vendor)) return null;
  const depFile = join(m.dir, DEP_FILES[m.runtime.kind][0]!);
  const deps = existsSync(depFile) ? readFileSync(depFile, 'utf8') : '';
  for (const file of readdirSync(vendor).filter((f) => VENDORED_SDK_FILE[m.runtime.kind].test(f)).sort()) {
    if (deps.includes(SDK_REFERENCE[m.runtime.kind](file))) return { file, hash: createHash('sha256').update(readFileSync(join(vendor, file))).digest('hex') };
  }
  return null;
}

export function dependencyHash(m: Manifest): string {
  const h = createHash('sha256');
  h.update(m.runtime.kind + '\0' + m.scripts.install + '\0');
  for (const f of DEP_FILES[m.runtime.kind]) {
    const p = join(m.dir, f);
    h.update(f + '\0');
    if (existsSync(p)) h.update(readFileSync(p));
    h.update('\0');
  }
  // The dependency file names the SDK's package by a path that stays the same from one build to the next.
  const sdk = vendoredSdk(m);
  if (sdk) h.update(`${sdk.file}\0${sdk.hash}\0`);
  return h.digest('hex');
}

/** PATH and related variables under which a worker's scripts run (its venv or node_modules/.bin first). */
export function workerEnv(m: Manifest, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  if (m.runtime.kind === 'python') {
    const venv = join(m.dir, '.venv');
    env.VIRTUAL_ENV = venv;
    env.PATH = join(venv, 'bin') + delimiter + (env.PATH ?? '');
    env.PYTHONUNBUFFERED = '1';
  } else {
    env.PATH = join(m.dir, 'node_modules', '.bin') + delimiter + (env.PATH ?? '');
  }
  return env;
}

export function isInstalled(m: Manifest): boolean {
  const marker = markerFile(m);
  return existsSync(marker) && readFileSync(marker, 'utf8').trim() === dependencyHash(m);
}

export interface InstallResult {
  status: 'cached' | 'installed';
  seconds: number;
}

/** How long an install waits for another one of the same directory before it gives up. */
const LOCK_WAIT_MS = 15 * 60_000;

/**
 * Hold `<env dir>/.svc-install.lock` (the pid of its holder) while `fn` runs: one install of a
 * directory at a time, across processes. `svc worker add` under `svc dev` installs a new worker
 * while the engine, which saw it appear in config.yaml, starts it: two pip installs into one .venv
 * ran at once, and the engine launched the worker before its SDK was installed (ModuleNotFoundError,
 * restarts). A lock whose holder is gone is taken over. Inside the env dir, which `svc dev` does not watch.
 */
async function withInstallLock<T>(m: Manifest, onLine: (line: string) => void, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  mkdirSync(envDir(m), { recursive: true });
  const lock = join(envDir(m), '.svc-install.lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  let told = false;
  for (;;) {
    signal?.throwIfAborted();
    try {
      closeSync(openSync(lock, 'wx'));
      writeFileSync(lock, `${process.pid}\n`);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number(readFileSync(lock, 'utf8').trim());
    if (Number.isInteger(holder) && holder > 0 && processStartToken(holder) === null) {
      rmSync(lock, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new InstallError(`${m.dir}: another install of it (pid ${holder}) has held ${lock} for ${LOCK_WAIT_MS / 60_000} minutes`);
    if (!told) onLine(`waiting for another install of ${m.dir} to finish (pid ${holder})`);
    told = true;
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

export interface InstallOptions {
  force?: boolean;
  onLine?: (line: string) => void;
  /**
   * The engine's installs (the supervisor's): aborted when the start is superseded (a stop, a
   * restart, the engine stopping). The install's whole process tree gets SIGTERM, SIGKILL
   * `cancelGraceMs` later, and ensureInstalled rejects with the signal's reason once it is gone;
   * nothing is recorded as installed, so the next start installs again. Such an install also
   * runs guarded by a liveness pipe (liveness-guard.ts), as a worker does: it never outlives the
   * engine, however the engine ends.
   */
  signal?: AbortSignal;
  cancelGraceMs?: number;
}

type Step = (command: string, env: Record<string, string>) => Promise<void>;

export async function ensureInstalled(m: Manifest, opts: InstallOptions = {}): Promise<InstallResult> {
  const t0 = Date.now();
  opts.signal?.throwIfAborted();
  if (!opts.force && isInstalled(m)) return { status: 'cached', seconds: 0 };
  const onLine = opts.onLine ?? (() => {});
  const step: Step = (command, env) => run(command, m.dir, env, onLine, opts.signal ? { signal: opts.signal, graceMs: opts.cancelGraceMs ?? 5000 } : undefined);
  // Another process may have installed it while this one waited for the lock.
  return withInstallLock(m, onLine, opts.signal, () => (!opts.force && isInstalled(m) ? Promise.resolve({ status: 'cached' as const, seconds: 0 }) : install(m, onLine, step, t0)));
}

async function install(m: Manifest, onLine: (line: string) => void, step: Step, t0: number): Promise<InstallResult> {
  // An environment installed before holds whichever build of the SDK it was installed with.
  const installedBefore = existsSync(markerFile(m));
  if (m.runtime.kind === 'python') {
    const venv = join(m.dir, '.venv');
    if (!existsSync(join(venv, 'bin', 'python'))) {
      onLine(`creating virtual environment ${venv}`);
      await step('python3 -m venv .venv', process.env as Record<string, string>);
    } else if (!existsSync(join(venv, 'bin', 'pip'))) {
      // A venv whose creation was cut short (Ctrl-C during `svc worker add`) has its python but not
      // yet its pip: `pip install` then ran whatever pip came next on PATH, installing into another
      // Python, and the worker started without its SDK (ModuleNotFoundError) while the install
      // counted as done. `venv` run again over it completes it (ensurepip), keeping what is there.
      onLine(`completing virtual environment ${venv} (it has no pip: its creation was interrupted)`);
      await step('python3 -m venv .venv', process.env as Record<string, string>);
    }
  }
  onLine(`$ ${m.scripts.install}`);
  await step(m.scripts.install, workerEnv(m));
  const sdk = vendoredSdk(m);
  if (sdk) {
    const sdkMarker = sdkMarkerFile(m);
    const had = existsSync(sdkMarker) ? readFileSync(sdkMarker, 'utf8').trim() : null;
    if (installedBefore && had !== sdk.hash) await refreshSdk(m, sdk.file, onLine, step);
    mkdirSync(envDir(m), { recursive: true });
    writeFileSync(sdkMarker, sdk.hash + '\n');
  }
  // Hash after installing: npm writes package-lock.json, which is part of the hash.
  // npm install of a package.json without dependencies creates no node_modules.
  mkdirSync(envDir(m), { recursive: true });
  writeFileSync(markerFile(m), dependencyHash(m) + '\n');
  return { status: 'installed', seconds: (Date.now() - t0) / 1000 };
}

/** Install the vendored SDK package again, though its version is the one installed (see the top of this file). */
async function refreshSdk(m: Manifest, file: string, onLine: (line: string) => void, step: Step): Promise<void> {
  const command =
    m.runtime.kind === 'python'
      ? `python -m pip install --force-reinstall --no-deps ./vendor/${file}`
      : // Rewrites package-lock.json's integrity for the package, and package.json's reference to the same text.
        `npm install --no-audit --no-fund ./vendor/${file}`;
  onLine(`the vendored SDK changed since the last install: $ ${command}`);
  await step(command, workerEnv(m));
}

/**
 * Run one install command. With `cancel`, in its own process group (npm and pip start children of
 * their own, which a signal to the shell alone would leave running) behind a liveness guard, and
 * ended, the whole group, when the signal aborts. Without it (`svc worker add` in a terminal), in
 * the caller's group, where Ctrl-C reaches it.
 */
function run(command: string, cwd: string, env: Record<string, string>, onLine: (line: string) => void, cancel?: { signal: AbortSignal; graceMs: number }): Promise<void> {
  cancel?.signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    // The command reads /dev/null, as without a guard: stdin is the guard's liveness pipe.
    const child = cancel
      ? spawn('/bin/sh', ['-c', guardedCommand(`{ ${command}\n} </dev/null`, false)], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true })
      : spawn('/bin/sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let cancelled = false;
    let forceTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      cancelled = true;
      killGroup(child.pid!, 'SIGTERM');
      forceTimer = setTimeout(() => killGroup(child.pid!, 'SIGKILL'), cancel!.graceMs);
    };
    if (cancel) {
      // Our end of the liveness pipe: never written, closed by the kernel when the engine exits.
      child.stdin!.on('error', () => undefined);
      (child.stdin as unknown as { unref?: () => void }).unref?.();
      cancel.signal.addEventListener('abort', onAbort, { once: true });
    }
    const tail: string[] = [];
    const feed = (buf: Buffer): void => {
      for (const line of buf.toString().split('\n')) {
        if (line.trim() === '') continue;
        tail.push(line);
        if (tail.length > 20) tail.shift();
        onLine(line);
      }
    };
    child.stdout.on('data', feed);
    child.stderr.on('data', feed);
    child.once('error', (e) => reject(new InstallError(`${cwd}: cannot run "${command}": ${e.message}`)));
    child.once('exit', (code, sig) => {
      if (cancel) {
        cancel.signal.removeEventListener('abort', onAbort);
        clearTimeout(forceTimer);
        // The shell is gone; what it left in its group (the guard, a daemonised helper) goes too.
        killGroup(child.pid!, 'SIGKILL');
        child.stdin!.destroy();
      }
      // Cancelled: rejected once the group is gone (SIGKILLed processes take a moment to die and be
      // reaped), so that the stop waiting for it leaves nothing behind.
      if (cancelled) void groupGone(child.pid, 2000).then(() => reject(cancel!.signal.reason));
      else if (code === 0) resolve();
      else reject(new InstallError(`${cwd}: "${command}" failed with ${code === null ? `signal ${sig}` : `exit code ${code}`}:\n${tail.join('\n')}`));
    });
  });
}

/** Resolves when no process of group `pid` runs any more, or after `ms`. */
async function groupGone(pid: number | undefined, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pid !== undefined && Date.now() < deadline && groupRuns(pid)) await new Promise((r) => setTimeout(r, 20));
}
