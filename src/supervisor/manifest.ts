import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { SvcError } from 'svc-sdk';
import { unknownKeyMessage } from 'svc-sdk/internal';

/**
 * svc.worker.yaml: how to install and start a worker directory. Every error names the file, the
 * field and the problem, so a user can fix it without reading our code.
 */
export interface Manifest {
  file: string;
  dir: string;
  name: string;
  runtime: {
    kind: RuntimeKind;
    package_manager: string;
    entry: string;
  };
  scripts: { install: string; start: string };
}

export type RuntimeKind = 'python' | 'typescript';

/** Per kind: the package managers we know how to drive, and the default scripts. */
export const KINDS: Record<RuntimeKind, { managers: string[]; install: (m: string) => string; start: (entry: string) => string }> = {
  python: {
    managers: ['pip'],
    install: () => 'pip install -r requirements.txt',
    start: (entry) => `python ${entry}`,
  },
  typescript: {
    managers: ['npm'],
    install: () => 'npm install',
    start: (entry) => `node --import tsx ${entry}`,
  },
};

export const MANIFEST_FILE = 'svc.worker.yaml';
/** The keys svc.worker.yaml may have, per level: any other is refused, naming the closest. */
const MANIFEST_KEYS = ['name', 'runtime', 'scripts'];
const RUNTIME_KEYS = ['kind', 'package_manager', 'entry'];
const SCRIPT_KEYS = ['install', 'start'];
export const WORKER_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export class ManifestError extends SvcError {
  constructor(message: string) {
    super('invalid_manifest', message);
    this.name = 'ManifestError';
  }
}

export function loadManifest(dir: string): Manifest {
  const file = join(dir, MANIFEST_FILE);
  if (!existsSync(file)) throw new ManifestError(`${file}: not found (a worker directory needs a ${MANIFEST_FILE}; see docs/workers.md)`);
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ManifestError(`${file}: invalid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  const fail = (field: string, problem: string): never => {
    throw new ManifestError(`${file}: ${field}: ${problem}`);
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('(top level)', 'must be a mapping with name, runtime, scripts');
  const m = raw as Record<string, unknown>;
  const refuseUnknown = (at: string, o: Record<string, unknown>, known: string[]): void => {
    for (const k of Object.keys(o)) if (!known.includes(k)) fail(at + k, unknownKeyMessage(k, known));
  };
  refuseUnknown('', m, MANIFEST_KEYS);
  const name = m.name;
  if (name === undefined) fail('name', 'missing (the worker\'s name, as config.yaml lists it)');
  if (typeof name !== 'string' || !WORKER_NAME.test(name)) {
    fail('name', `must be lowercase letters, digits, '.', '_' or '-' (at most 63), got ${JSON.stringify(name)}`);
  }
  const rt = m.runtime;
  if (rt === undefined) fail('runtime', 'missing (a mapping with kind, package_manager, entry)');
  if (typeof rt !== 'object' || rt === null || Array.isArray(rt)) fail('runtime', 'must be a mapping with kind, package_manager, entry');
  const r = rt as Record<string, unknown>;
  refuseUnknown('runtime.', r, RUNTIME_KEYS);
  if (r.kind === undefined) fail('runtime.kind', `missing (one of ${Object.keys(KINDS).join(', ')})`);
  const kinds = Object.keys(KINDS);
  if (typeof r.kind !== 'string' || !kinds.includes(r.kind)) fail('runtime.kind', `must be one of ${kinds.join(', ')}, got ${JSON.stringify(r.kind)}`);
  const kind = r.kind as RuntimeKind;
  const spec = KINDS[kind];
  const pm = r.package_manager ?? spec.managers[0];
  if (typeof pm !== 'string' || !spec.managers.includes(pm)) {
    fail('runtime.package_manager', `for kind ${kind} must be ${spec.managers.join(' or ')}, got ${JSON.stringify(r.package_manager)}`);
  }
  if (r.entry === undefined) fail('runtime.entry', 'missing (the path of the worker\'s entry file)');
  if (typeof r.entry !== 'string' || r.entry.length === 0) fail('runtime.entry', `must be the path of the worker's entry file, got ${JSON.stringify(r.entry)}`);
  const entry = r.entry as string;
  if (!existsSync(join(dir, entry))) fail('runtime.entry', `file ${entry} does not exist in ${dir}`);
  const s = m.scripts ?? {};
  if (typeof s !== 'object' || s === null || Array.isArray(s)) fail('scripts', 'must be a mapping with install and start');
  const sc = s as Record<string, unknown>;
  refuseUnknown('scripts.', sc, SCRIPT_KEYS);
  for (const key of ['install', 'start']) {
    if (sc[key] !== undefined && (typeof sc[key] !== 'string' || (sc[key] as string).trim() === '')) {
      fail(`scripts.${key}`, `must be a shell command, got ${JSON.stringify(sc[key])}`);
    }
  }
  return {
    file,
    dir,
    name: name as string,
    runtime: { kind, package_manager: pm as string, entry },
    scripts: {
      install: (sc.install as string | undefined) ?? spec.install(pm as string),
      start: (sc.start as string | undefined) ?? spec.start(entry),
    },
  };
}
