import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { WORKER_NAME } from '../supervisor/manifest.js';
import { fill, placeholderValues, ScaffoldError, svcRoot, templateFiles } from './scaffold.js';
import { vendorWorkers } from './vendor.js';

export const WORKER_LANGUAGES = ['python', 'typescript'] as const;
export type WorkerLanguage = (typeof WORKER_LANGUAGES)[number];

export interface NewWorker {
  name: string;
  language: WorkerLanguage;
  target: string;
  files: string[];
}

/**
 * `svc worker new <dir>`: a worker directory from worker-templates/<language> of this checkout — its
 * manifest, its dependencies (the SDK vendored in its vendor/; tsx for TypeScript) and one function,
 * `<name>::hello`. The name is the directory's unless given; it must be a valid worker name.
 */
export function scaffoldWorker(opts: { target: string; language: WorkerLanguage; name?: string; force?: boolean }): NewWorker {
  const target = resolve(opts.target);
  const name = opts.name ?? basename(target);
  if (!WORKER_NAME.test(name)) {
    throw new ScaffoldError('invalid_worker_name', `${JSON.stringify(name)} is not a worker name (lowercase letters, digits, '.', '_' or '-', starting with a letter or digit); pass --name`);
  }
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) throw new ScaffoldError('not_a_directory', `${target} exists and is not a directory`);
    if (readdirSync(target).length > 0 && !opts.force) {
      throw new ScaffoldError('directory_not_empty', `${target} is not empty; choose another directory, or pass --force to write the worker's files into it`);
    }
  }
  const root = svcRoot();
  const source = join(root, 'worker-templates', opts.language);
  const values = { ...placeholderValues(target), worker_name: name };
  const files: string[] = [];
  for (const rel of templateFiles(source)) {
    const out = join(target, ...rel.split('/'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, fill(readFileSync(join(source, rel), 'utf8'), values, rel.endsWith('.json')));
    files.push(rel);
  }
  for (const v of vendorWorkers([target], root)) files.push(v.package);
  return { name, language: opts.language, target, files };
}
