import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workerEnv } from './install.js';
import { loadManifest, type Manifest } from './manifest.js';
import type { LaunchSpec } from './runtime.js';
import type { WorkerEntry } from './worker-entries.js';

/** The svc installation this code runs from (dist/src/supervisor/launch.js → repo root). */
export const SVC_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Entry script of each built-in worker, relative to the svc installation. */
export const BUILTIN_MAIN: Record<string, string> = {
  'svc-state': 'dist/src/workers/state/main.js',
  'svc-http': 'dist/src/workers/http/main.js',
  'svc-queue': 'dist/src/workers/queue/main.js',
  'svc-cron': 'dist/src/workers/cron/main.js',
};

/** Built-ins that keep data on disk, and where by default (relative to config.yaml). */
const DEFAULT_DATA_DIR: Record<string, string> = { 'svc-state': 'data/state', 'svc-queue': 'data/queue', 'svc-cron': 'data/cron' };

/** `.svc/` beside config.yaml: logs, engine state. */
export function projectStateDir(configFile: string): string {
  return join(dirname(resolve(configFile)), '.svc');
}

/**
 * The engine's own SVC_READY_FILE is not its workers': each would write the one file (the last
 * write wins, the first to stop removes it). A worker gets one only from its config.yaml `env`.
 */
const READY_FILE_ENV = 'SVC_READY_FILE';

function withoutReadyFile(env: Record<string, string>): Record<string, string> {
  delete env[READY_FILE_ENV];
  return env;
}

export function logFileOf(configFile: string, name: string): string {
  return join(projectStateDir(configFile), 'logs', `${name}.log`);
}

/**
 * Turn a config.yaml entry into what a runtime needs. Built-ins run this installation's compiled
 * entry with node; user workers run their manifest's start script under their own environment.
 */
export function launchSpecOf(entry: WorkerEntry, configFile: string, engineUrl: string, replica = 0): LaunchSpec & { manifest?: Manifest } {
  const projectDir = dirname(resolve(configFile));
  const common = {
    SVC_URL: engineUrl,
    SVC_WORKER_NAME: entry.name,
    ...entry.env,
  };
  if (entry.builtin) {
    const config = { ...entry.config };
    // Relative paths in a built-in's config are relative to config.yaml, not to wherever svc runs.
    if (typeof config.data_dir === 'string') config.data_dir = resolve(projectDir, config.data_dir);
    else if (DEFAULT_DATA_DIR[entry.builtin]) config.data_dir = join(projectDir, DEFAULT_DATA_DIR[entry.builtin]!);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    delete env[READY_FILE_ENV];
    return {
      name: entry.name,
      replica,
      cwd: projectDir,
      command: `${process.execPath} ${join(SVC_ROOT, BUILTIN_MAIN[entry.builtin]!)}`,
      env: { ...env, ...common, SVC_WORKER_CONFIG: JSON.stringify(config) },
      logFile: logFileOf(configFile, entry.name),
    };
  }
  const manifest = loadManifest(entry.path!);
  const own = { ...common, ...(Object.keys(entry.config).length ? { SVC_WORKER_CONFIG: JSON.stringify(entry.config) } : {}) };
  return {
    name: entry.name,
    replica,
    cwd: manifest.dir,
    command: manifest.scripts.start,
    env: { ...withoutReadyFile(workerEnv(manifest)), ...own },
    containerEnv: own,
    logFile: logFileOf(configFile, entry.name),
    manifest,
  };
}
