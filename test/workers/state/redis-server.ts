/**
 * A private redis-server for a test: a child process on 127.0.0.1 and a free port, no persistence.
 * Needs Debian's redis-server on PATH (.ci/run installs it).
 */
import { spawn } from 'node:child_process';
import { freePort } from '../../helpers/util.js';

export interface RedisServer {
  url: string;
  stop(): Promise<void>;
}

/** `password`: the server requires it (`requirepass`); `url` does not carry it. */
export async function startRedis(opts: { password?: string } = {}): Promise<RedisServer> {
  const port = await freePort();
  const auth = opts.password !== undefined ? ['--requirepass', opts.password] : [];
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...auth], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start within 10 s:\n${output}`)), 10_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run redis-server (install Debian's redis-server): ${e.message}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}:\n${output}`));
    });
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  });
  child.removeAllListeners('exit');
  let stopped: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    // Once: after SIGKILL exitCode stays null (signalCode is set), so a second stop() must not wait for another 'exit'.
    stop: () => (stopped ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    })),
  };
}
