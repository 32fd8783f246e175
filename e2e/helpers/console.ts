import { spawn, type ChildProcess } from 'node:child_process';
import { SVC_BIN, until } from './cli.js';

/** `svc console` as a child process; resolves with its URL once it prints it. */
export async function startConsole(engineUrl: string, port = 0): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [SVC_BIN, 'console', '--port', String(port), '--address', engineUrl], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  process.on('exit', () => child.kill('SIGKILL'));
  const m = await until('svc console to print its URL', () => /svc console on (http:\/\/\S+)/.exec(out) ?? (child.exitCode !== null ? Promise.reject(new Error(out)) : null), 15_000);
  return { url: m[1]!, child, output: () => out };
}
