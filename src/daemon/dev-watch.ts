import { watch } from 'node:fs';
import { basename, dirname, resolve, sep } from 'node:path';
import { ConfigFileError } from '../engine/config/config-error.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import type { WorkerEntry } from '../supervisor/worker-entries.js';
import { loadConfig, workerEntriesOf } from './config-file.js';
import { watchSourceTree, type SourceWatch } from './source-watch.js';

/** Changes closer together than this are one change: an editor's save is several writes. */
export const DEV_DEBOUNCE_MS = 150;

/**
 * What a worker directory holds that is not its source: installed dependencies, caches, the
 * worker's own data. A change there restarting the worker would loop (an install writes
 * node_modules, a Python run writes __pycache__).
 */
const NOT_SOURCE = new Set(['node_modules', '.venv', '__pycache__', '.git', '.svc', '.mypy_cache', '.pytest_cache', '.ruff_cache', 'dist', 'data']);

function isSource(relativePath: string): boolean {
  const parts = relativePath.split(sep);
  if (parts.some((p) => NOT_SOURCE.has(p))) return false;
  const name = parts.at(-1) ?? '';
  // Editors' swap and backup files.
  return !(name.endsWith('~') || name.endsWith('.swp') || name.endsWith('.swx') || name.startsWith('.#') || name === '4913');
}

/** The lock files package managers write beside a worker's sources when they install. */
function isLockFile(name: string): boolean {
  return name.endsWith('.lock') || name === 'package-lock.json' || name === 'npm-shrinkwrap.json' || name === 'pnpm-lock.yaml';
}

export interface DevWatch {
  close(): void;
}

/**
 * `svc dev`: the engine keeps running while the project changes. A source file of a local worker
 * (one with `path:`) restarts that worker, debounced; its dependencies are reinstalled only when
 * their files changed (the supervisor's install is skipped while their hash is unchanged). An edit
 * of config.yaml's `workers:` is applied without restarting the engine: entries added are started,
 * removed ones stopped, changed ones restarted, and a directory worker's watch follows its path. A
 * config.yaml the engine would refuse is reported and changes nothing.
 */
export function startDevWatch(o: { configFile: string; supervisor: Supervisor; initial: WorkerEntry[]; log: (level: 'info' | 'warn' | 'error', message: string) => void }): DevWatch {
  let entries = new Map(o.initial.map((e) => [e.name, e]));
  const sourceWatchers = new Map<string, SourceWatch>();
  const timers = new Map<string, NodeJS.Timeout>();
  let closed = false;

  const debounce = (key: string, fn: () => void): void => {
    clearTimeout(timers.get(key));
    timers.set(
      key,
      setTimeout(() => {
        timers.delete(key);
        if (!closed) fn();
      }, DEV_DEBOUNCE_MS),
    );
  };

  const restart = (name: string, why: string): void => {
    const entry = entries.get(name);
    if (!entry) return;
    o.log('info', `dev: ${why}; restarting ${name}`);
    void o.supervisor.restart(entry).catch((e: Error) => o.log('error', `dev: restart of ${name} failed: ${e.message}`));
  };

  const watchSources = (entry: WorkerEntry): void => {
    if (!entry.path || sourceWatchers.has(entry.name)) return;
    try {
      const w = watchSourceTree(entry.path, {
        skipDir: (name) => NOT_SOURCE.has(name),
        onError: (message) => o.log('warn', `dev: ${message}`),
        onChange: (rel) => {
          if (rel && !isSource(rel)) return;
          // A lock file changing while it starts is its own install's doing (npm install rewrites
          // package-lock.json), not an edit: that restarted it in the middle of its first start. A
          // source edited while it starts (a Docker image build takes a while) still restarts it.
          if (isLockFile(basename(rel)) && o.supervisor.get(entry.name)?.status === 'starting') return;
          debounce(`worker:${entry.name}`, () => restart(entry.name, `${rel || entry.path} changed`));
        },
      });
      sourceWatchers.set(entry.name, w);
    } catch (e) {
      o.log('warn', `dev: cannot watch ${entry.path}: ${(e as Error).message}`);
    }
  };
  const unwatchSources = (name: string): void => {
    sourceWatchers.get(name)?.close();
    sourceWatchers.delete(name);
  };

  const applyConfig = (): void => {
    let next: WorkerEntry[];
    try {
      next = workerEntriesOf(loadConfig(o.configFile, { create: false }));
    } catch (e) {
      o.log('error', `dev: ${o.configFile} not applied: ${e instanceof ConfigFileError ? e.message : (e as Error).message}`);
      return;
    }
    const before = entries;
    entries = new Map(next.map((e) => [e.name, e]));
    for (const [name] of before) {
      if (entries.has(name)) continue;
      o.log('info', `dev: ${name} left config.yaml; stopping it`);
      unwatchSources(name);
      void o.supervisor.remove(name);
    }
    for (const entry of next) {
      const old = before.get(entry.name);
      if (!old) {
        o.log('info', `dev: ${entry.name} added to config.yaml; starting it`);
        void o.supervisor.start(entry);
      } else if (JSON.stringify(old) !== JSON.stringify(entry)) {
        if (old.path !== entry.path) unwatchSources(entry.name);
        restart(entry.name, `its entry in config.yaml changed`);
      }
      watchSources(entry);
    }
  };

  // The directory, not the file: editors replace a file by renaming another over it.
  const configDir = dirname(resolve(o.configFile));
  const configName = basename(o.configFile);
  const configWatcher = watch(configDir, (_event, file) => {
    if (file && file.toString() !== configName) return;
    debounce('config', applyConfig);
  });
  configWatcher.on('error', (e) => o.log('warn', `dev: stopped watching ${o.configFile}: ${e.message}`));
  for (const e of o.initial) watchSources(e);
  o.log('info', `dev: watching ${o.configFile} and the sources of ${sourceWatchers.size} local worker(s)`);

  return {
    close(): void {
      closed = true;
      configWatcher.close();
      for (const t of timers.values()) clearTimeout(t);
      for (const name of [...sourceWatchers.keys()]) unwatchSources(name);
    },
  };
}
