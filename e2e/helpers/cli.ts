/**
 * Black-box helpers: run the real `svc` binary (`node bin/svc.js …`) as a child process, the way a
 * user runs it, and make sure no child outlives the test file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file runs from dist/e2e/helpers/). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const SVC_BIN = join(ROOT, 'bin', 'svc.js');

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** The environment for children: never inherit an engine address from the developer's shell. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!('SVC_URL' in extra)) delete env.SVC_URL;
  return env;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Run `svc <args>` to completion; SIGKILLed (and rejected) if it runs past `timeoutMs`. */
export function runSvc(args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; stdin?: string } = {}): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const t0 = Date.now();
  const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd: opts.cwd ?? ROOT, env: childEnv(opts.env), stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  children.add(child);
  if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** An engine started with the real binary; `stop()` signals it and waits for its exit. */
export class EngineProcess {
  url = '';
  port = 0;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        children.delete(child);
        resolve({ code, signal });
      });
    });
  }

  /**
   * `svc <args>` in `cwd`; resolves once it printed its ready line. Rejects, with everything it
   * printed, if it exits first or is not ready within `timeoutMs`.
   */
  static async start(args: string[], opts: { cwd: string; timeoutMs?: number }): Promise<EngineProcess> {
    const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd: opts.cwd, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const e = new EngineProcess(child);
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void e.exited.then(() => (exited = true));
    for (;;) {
      const m = /svc engine ready on (ws:\/\/[^\s]+:(\d+))/.exec(e.stdout);
      if (m) {
        e.url = m[1]!;
        e.port = Number(m[2]);
        return e;
      }
      if (exited || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`engine ${exited ? 'exited' : `not ready within ${timeoutMs} ms`}\nstdout: ${e.stdout}\nstderr: ${e.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Signal the engine and wait for it to exit (SIGKILL after `timeoutMs`). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((r) => {
      timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        r();
      }, timeoutMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    return this.exited;
  }
}

/** A fresh temporary directory, and its removal. */
export function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-e2e-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export { freePort as closedPort } from '../../test/helpers/util.js';

/** Poll `probe` until truthy; fail naming `what` after `ms`. */
export async function until<T>(what: string, probe: () => T | Promise<T>, ms = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** fetch() of a console server's API as its own page does it: with the session's CSRF token. */
export async function consoleFetch(base: string, path: string, init: RequestInit = {}): Promise<Response> {
  const session = (await (await fetch(new URL('/api/session', base))).json()) as { csrf_token: string };
  return fetch(new URL(path, base), { ...init, headers: { ...(init.headers as Record<string, string>), 'x-csrf-token': session.csrf_token } });
}

/** A process with this pid runs (it may be anyone's: pair it with what you know of the pid). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A row of `svc worker list --json`. */
export interface WorkerListRow {
  name: string;
  pid: number | null;
  /** One per replica; docker workers have none (their container ids are in instances). */
  pids: number[];
  instances: Array<string | null>;
  status: string;
  restarts: number;
  connections: number;
  functions: string[];
  last_error: string | null;
  last_exit: { how: string; at: string; output: string[] } | null;
}
