import { unknownKeyMessage } from 'svc-sdk/internal';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { ConfigFileError, UnsetVariableError } from '../engine/config/config-error.js';
import { parseEngineConfig } from '../engine/config/engine-config.js';
import { parseDeployConfig, type DeployConfig } from './deploy-config.js';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions } from '../engine/options.js';
import { parseWorkerEntries, type WorkerEntry } from '../supervisor/worker-entries.js';

/**
 * config.yaml as a whole: the engine's block (parsed by src/engine/config/) and the workers the
 * supervisor runs (src/supervisor/worker-entries.ts). Parsed with `yaml` as a Document so that
 * `svc worker add` can append to it with the user's comments kept.
 */

const engineDefaults = DEFAULT_ENGINE_OPTIONS;

/** What `svc --config` writes when the file is missing: the defaults themselves, with what each key means. */
export const DEFAULT_CONFIG_YAML = `# svc configuration (docs/configuration.md lists every key)
engine:
  # Interface and port of the WebSocket server workers connect to.
  host: ${engineDefaults.host}
  port: ${engineDefaults.port}
  # Largest frame a worker may send; larger ones get a frame_too_large error.
  max_frame_bytes: ${engineDefaults.maxFrameBytes}
  # Default deadline of a call; callers may ask for another one per call.
  invocation_timeout_ms: ${engineDefaults.invocationTimeoutMs}
  # On Ctrl-C / SIGTERM, how long calls in flight may finish.
  shutdown_grace_ms: ${engineDefaults.shutdownGraceMs}

# Workers the engine starts and supervises (\`svc worker add <dir|svc-state|svc-http|svc-queue|svc-cron>\` appends here).
workers: []
`;

const TOP_LEVEL_KEYS = ['engine', 'workers', 'deploy'];

export interface LoadedConfig {
  file: string;
  created: boolean;
  engine: EngineOptions;
  /** Raw worker entries; workerEntriesOf validates them. */
  workers: unknown[];
  deploy: DeployConfig;
}

/**
 * `engineEnv: 'optional'`, for CLI commands that use config.yaml's workers, deploy block or the
 * engine's address but not the engine's secrets: a `${VAR}` of the engine's block that is unset in
 * the CLI's shell (a token, `node_id: ${SVC_NODE_ID}`: set where the engine runs, docs/security.md,
 * docs/cluster.md) does not stop them; the engine block is then read for host and port only, and
 * the engine checks the rest when it starts.
 */
export interface LoadConfigOptions {
  create?: boolean;
  engineEnv?: 'required' | 'optional';
}

/** Read config.yaml, creating it with defaults when missing. Throws ConfigFileError naming the key. */
export function loadConfig(file: string, opts: LoadConfigOptions = {}): LoadedConfig {
  let created = false;
  if (!existsSync(file)) {
    if (opts.create === false) throw new ConfigFileError(file, 'file not found');
    writeFileSync(file, DEFAULT_CONFIG_YAML);
    created = true;
  }
  const text = readFileSync(file, 'utf8');
  return { ...parseConfig(file, text, process.env, opts.engineEnv), created };
}

export function parseConfig(file: string, text: string, env: NodeJS.ProcessEnv = process.env, engineEnv: 'required' | 'optional' = 'required'): Omit<LoadedConfig, 'created'> {
  const sections = readConfigSections(file, text);
  let engine: EngineOptions;
  try {
    engine = parseEngineConfig(file, sections.engine, env);
  } catch (e) {
    if (!(e instanceof UnsetVariableError) || engineEnv === 'required') throw e;
    const block = (sections.engine ?? {}) as Record<string, unknown>;
    engine = parseEngineConfig(file, Object.fromEntries(['host', 'port'].filter((k) => k in block).map((k) => [k, block[k]])), env);
  }
  return { file, engine, workers: sections.workers ?? [], deploy: parseDeployConfig(file, sections.deploy) };
}

/**
 * config.yaml's text as its top-level sections, checked as far as the file's shape goes: valid YAML,
 * a mapping, only known keys, `workers` a list. For readers that need a section as written
 * (`svc deploy kubernetes` copies the engine block into a ConfigMap); parseConfig checks the rest.
 */
export function readConfigSections(file: string, text: string): { engine?: unknown; workers?: unknown[]; deploy?: unknown } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const pos = e.linePos?.[0];
    throw new ConfigFileError(file, `invalid YAML${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}: ${e.message.split('\n')[0]}`);
  }
  const root: unknown = doc.toJS() ?? {};
  if (typeof root !== 'object' || root === null || Array.isArray(root)) throw new ConfigFileError(file, 'the top level must be a mapping (engine:, workers:)');
  const sections = root as Record<string, unknown>;
  for (const key of Object.keys(sections)) {
    if (!TOP_LEVEL_KEYS.includes(key)) throw new ConfigFileError(file, `${key}: ${unknownKeyMessage(key, TOP_LEVEL_KEYS, 'top-level key')}`);
  }
  if (sections.workers !== undefined && sections.workers !== null && !Array.isArray(sections.workers)) throw new ConfigFileError(file, '"workers" must be a list');
  return { engine: sections.engine, workers: (sections.workers ?? undefined) as unknown[] | undefined, deploy: sections.deploy };
}

/** The workers of a loaded config.yaml, validated, each token it names one of engine.auth.tokens. */
export function workerEntriesOf(cfg: Omit<LoadedConfig, 'created'>): WorkerEntry[] {
  const entries = parseWorkerEntries(cfg.file, cfg.workers);
  for (const e of entries) {
    if (e.token && !cfg.engine.tokens.some((t) => t.name === e.token)) {
      throw new ConfigFileError(cfg.file, `workers: ${e.name}.token: no token named ${e.token} in engine.auth.tokens`);
    }
  }
  return entries;
}
