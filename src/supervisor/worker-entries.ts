import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { isMap, isSeq, parseDocument, YAMLSeq } from 'yaml';
import { closestKey, unknownKeyMessage } from 'svc-sdk/internal';
import { ConfigFileError } from '../engine/config/config-error.js';
import { printable } from '../engine/printable.js';
import { WORKER_NAME } from './manifest.js';

/** The built-in workers `svc worker add` knows by name. */
export const BUILTIN_WORKERS = ['svc-state', 'svc-http', 'svc-queue', 'svc-cron'] as const;
export type BuiltinWorker = (typeof BUILTIN_WORKERS)[number];
export const RUNTIMES = ['process', 'docker'] as const;
export type RuntimeName = (typeof RUNTIMES)[number];
/** The keys of a `workers:` entry (docs/configuration.md); any other is refused, naming the closest. */
export const ENTRY_KEYS = ['name', 'builtin', 'path', 'runtime', 'replicas', 'env', 'config', 'token'] as const;

/** One entry of config.yaml's `workers:` list, validated. */
export interface WorkerEntry {
  name: string;
  /** A built-in worker, or a directory holding svc.worker.yaml (absolute after validation). */
  builtin?: BuiltinWorker;
  path?: string;
  runtime: RuntimeName;
  replicas: number;
  env: Record<string, string>;
  /** Passed to the worker as the JSON env var SVC_WORKER_CONFIG (built-ins read it). */
  config: Record<string, unknown>;
  /** Name of an engine.auth token to start it with (default: the supervisor's own admin token). */
  token?: string;
}

export function parseWorkerEntries(file: string, raw: unknown[]): WorkerEntry[] {
  const base = dirname(resolve(file));
  const seen = new Set<string>();
  return raw.map((item, i) => {
    const at = `workers[${i}]`;
    const fail = (field: string, problem: string): never => {
      throw new ConfigFileError(file, `${at}${field ? '.' + field : ''}: ${problem}`);
    };
    if (typeof item !== 'object' || item === null || Array.isArray(item)) fail('', 'must be a mapping with name and builtin or path');
    const e = item as Record<string, unknown>;
    for (const k of Object.keys(e)) if (!(ENTRY_KEYS as readonly string[]).includes(k)) fail(k, unknownKeyMessage(k, ENTRY_KEYS));
    if (e.name === undefined) fail('name', 'missing (the worker\'s name: lowercase letters, digits, \'.\', \'_\' or \'-\')');
    if (typeof e.name !== 'string' || !WORKER_NAME.test(e.name)) fail('name', `must be lowercase letters, digits, '.', '_' or '-', got ${JSON.stringify(e.name)}`);
    const name = e.name as string;
    if (seen.has(name)) fail('name', `${name} is listed twice`);
    seen.add(name);
    if ((e.builtin === undefined) === (e.path === undefined)) fail('', `needs exactly one of builtin (${BUILTIN_WORKERS.join(', ')}) or path (a worker directory)`);
    if (e.builtin !== undefined && !(BUILTIN_WORKERS as readonly string[]).includes(e.builtin as string)) {
      fail('builtin', `must be one of ${BUILTIN_WORKERS.join(', ')}, got ${JSON.stringify(e.builtin)}`);
    }
    if (e.path !== undefined && (typeof e.path !== 'string' || e.path.length === 0)) fail('path', `must be a directory path, got ${JSON.stringify(e.path)}`);
    const runtime = e.runtime ?? 'process';
    if (!(RUNTIMES as readonly string[]).includes(runtime as string)) fail('runtime', `must be one of ${RUNTIMES.join(', ')}, got ${JSON.stringify(runtime)}`);
    const replicas = e.replicas ?? 1;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1 || replicas > 64) fail('replicas', `must be an integer from 1 to 64, got ${JSON.stringify(replicas)}`);
    const env = e.env ?? {};
    if (typeof env !== 'object' || env === null || Array.isArray(env)) fail('env', 'must be a mapping of names to values');
    const envOut: Record<string, string> = {};
    for (const [k, v] of Object.entries(env as Record<string, unknown>)) {
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') fail(`env.${k}`, `must be a string, number or boolean, got ${JSON.stringify(v)}`);
      envOut[k] = String(v);
    }
    if (e.token !== undefined && (typeof e.token !== 'string' || e.token === '')) fail('token', `must be the name of a token in engine.auth.tokens, got ${JSON.stringify(e.token)}`);
    const config = e.config ?? {};
    if (typeof config !== 'object' || config === null || Array.isArray(config)) fail('config', 'must be a mapping');
    // svc-queue's embedded store serves one process per data directory (docs/queues.md).
    if (e.builtin === 'svc-queue' && (replicas as number) > 1 && ((config as Record<string, unknown>).store ?? 'embedded') === 'embedded') {
      fail('replicas', 'svc-queue with the embedded store runs one replica per data_dir; set config.store: redis to run several');
    }
    return {
      name,
      ...(e.builtin !== undefined ? { builtin: e.builtin as BuiltinWorker } : {}),
      ...(e.path !== undefined ? { path: resolve(base, e.path as string) } : {}),
      runtime: runtime as RuntimeName,
      replicas: replicas as number,
      env: envOut,
      config: config as Record<string, unknown>,
      ...(e.token !== undefined ? { token: e.token as string } : {}),
    };
  });
}

/**
 * Append (or update) a worker in config.yaml, keeping the user's comments and layout. An entry
 * with the same name is updated in place, never duplicated. Returns whether anything changed.
 */
export function upsertWorkerEntry(
  file: string,
  entry: { name: string; builtin?: string; path?: string; runtime?: RuntimeName; replicas?: number; config?: Record<string, unknown> },
): 'added' | 'updated' | 'unchanged' {
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new ConfigFileError(file, `invalid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
  let workers = doc.get('workers', true);
  if (workers === undefined || workers === null || (!isSeq(workers) && (workers as { value?: unknown }).value === null)) {
    workers = new YAMLSeq();
    doc.set('workers', workers);
  }
  if (!isSeq(workers)) throw new ConfigFileError(file, '"workers" must be a list');
  const seq = workers as YAMLSeq;
  // An empty flow list `workers: []` would stay in flow style; entries read better as a block.
  seq.flow = false;
  const fields: Record<string, unknown> = { name: entry.name };
  if (entry.builtin) fields.builtin = entry.builtin;
  if (entry.path) {
    const rel = relative(dirname(resolve(file)), entry.path) || '.';
    fields.path = rel.startsWith('.') || rel.startsWith('/') ? rel : `./${rel}`;
  }
  if (entry.runtime && entry.runtime !== 'process') fields.runtime = entry.runtime;
  if (entry.replicas && entry.replicas !== 1) fields.replicas = entry.replicas;
  if (entry.config && Object.keys(entry.config).length > 0) fields.config = nestDotted(entry.config);
  const existing = seq.items.find((it) => isMap(it) && it.get('name') === entry.name);
  if (existing && isMap(existing)) {
    let changed = false;
    for (const [k, v] of Object.entries(fields)) {
      // config is merged key by key below, keeping the keys not given now.
      if (k !== 'config' && existing.get(k) !== v) {
        existing.set(k, v);
        changed = true;
      }
    }
    if (!entry.runtime || entry.runtime === 'process') {
      if (existing.has('runtime') && existing.get('runtime') !== 'process') {
        existing.delete('runtime');
        changed = true;
      }
    }
    for (const [k, v] of Object.entries(entry.config ?? {})) {
      const path = ['config', ...k.split('.')];
      if (JSON.stringify(existing.getIn(path)) !== JSON.stringify(v)) {
        if (!existing.has('config')) existing.set('config', doc.createNode({}));
        existing.setIn(path, v);
        changed = true;
      }
    }
    if (!changed) return 'unchanged';
    writeFileSync(file, doc.toString());
    return 'updated';
  }
  seq.add(doc.createNode(fields));
  writeFileSync(file, doc.toString());
  return 'added';
}

/** `{"queues.emails.max_attempts": 5}` → `{queues: {emails: {max_attempts: 5}}}` (what `--set a.b=v` means). */
function nestDotted(flat: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flat)) {
    const parts = k.split('.');
    let at = out;
    for (const p of parts.slice(0, -1)) {
      const next = at[p];
      at = (at[p] = typeof next === 'object' && next !== null && !Array.isArray(next) ? next : {}) as Record<string, unknown>;
    }
    at[parts[parts.length - 1]!] = v;
  }
  return out;
}

export function removeWorkerEntry(file: string, name: string): boolean {
  const doc = parseDocument(readFileSync(file, 'utf8'));
  const workers = doc.get('workers', true);
  if (!isSeq(workers)) return false;
  const idx = workers.items.findIndex((it) => isMap(it) && it.get('name') === name);
  if (idx < 0) return false;
  workers.items.splice(idx, 1);
  writeFileSync(file, doc.toString());
  return true;
}

/** The names config.yaml's workers: lists, as the file says now (none when it cannot be read). */
export function workerNamesIn(file: string): string[] {
  try {
    const workers = (parseDocument(readFileSync(file, 'utf8')).toJS() as { workers?: unknown } | null)?.workers;
    return Array.isArray(workers) ? workers.map((w) => (w as { name?: unknown } | null)?.name).filter((n): n is string => typeof n === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * `Worker math-workr is not listed in config.yaml (did you mean "math-worker"?); it lists: …`: a
 * mistyped name gets the one meant. Printable (src/engine/printable.ts): the name is whatever was
 * typed or sent, and the CLI prints this as it is.
 */
export function notListedMessage(name: string, names: readonly string[], file: string): string {
  const near = closestKey(name, names);
  return printable(`Worker ${name} is not listed in ${file}${near ? ` (did you mean "${near}"?)` : ''}; ${names.length ? `it lists: ${names.join(', ')}` : 'it lists no workers (svc worker add adds one)'}`);
}
