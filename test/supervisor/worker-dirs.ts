/**
 * Worker directories for the supervisor's tests: a temporary root per test file, a worker directory
 * with its svc.worker.yaml and files, and whether a process is alive.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

/** A temporary directory made before the file's tests and removed after them; `root()` is its path. */
export function tempRoot(): () => string {
  let root = '';
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-sup-'));
  });
  after(() => {
    rmSync(root, { recursive: true, force: true });
  });
  return () => root;
}

/** `<root>/<name>` with `svc.worker.yaml` holding `manifest`, and `files` beside it. */
export function workerDirIn(root: string, name: string, manifest: string, files: Record<string, string> = {}): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'svc.worker.yaml'), manifest);
  for (const [f, body] of Object.entries(files)) writeFileSync(join(dir, f), body);
  return dir;
}

/** A Node worker's manifest: entry w.mjs, install `true`, start `start`. */
export const nodeManifest = (name: string, start: string): string =>
  `name: ${name}\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: ${start}\n`;

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
