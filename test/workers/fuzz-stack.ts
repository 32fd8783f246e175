/**
 * What the built-in fuzz tests (builtins-fuzz, http/console-fuzz) run against: a real engine on
 * port 0 in this process, and svc-state, svc-queue, svc-cron and svc-http each as its own process
 * (`node dist/src/workers/<name>/main.js`, as `svc worker add` starts them), so that a crash shows
 * as an exited process, not as a test process taking the engine down with it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEngine } from '../helpers/engine.js';
import type { EngineOptions } from '../../src/engine/options.js';

const main = (name: string): string => fileURLToPath(new URL(`../../src/workers/${name}/main.js`, import.meta.url));

export interface BuiltinChild {
  name: string;
  child: ChildProcess;
  output(): string;
}

export interface FuzzStack {
  engine: Awaited<ReturnType<typeof startEngine>>;
  children: BuiltinChild[];
  /** Where svc-http listens. */
  httpPort: number;
  /** Fails naming every built-in process that exited, with its last output. */
  assertAlive(): void;
  stop(): Promise<void>;
}

/** Every error code docs/errors.md lists (the first column of its tables). */
export function documentedCodes(): Set<string> {
  const md = readFileSync(fileURLToPath(new URL('../../../docs/errors.md', import.meta.url)), 'utf8');
  return new Set([...md.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!));
}

function spawnBuiltin(name: string, url: string, config: Record<string, unknown>): BuiltinChild {
  const child = spawn(process.execPath, [main(name)], {
    env: { ...process.env, SVC_URL: url, SVC_WORKER_NAME: `fuzz-${name}`, SVC_WORKER_CONFIG: JSON.stringify(config), SVC_LOG_ECHO: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  // Bounded: a worker that logs every refused input must not grow the test process without end.
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-64 * 1024));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  process.on('exit', () => child.kill('SIGKILL'));
  return { name, child, output: () => out };
}

export async function startFuzzStack(engineOpts: Partial<EngineOptions> = {}, queues: Record<string, unknown> = {}): Promise<FuzzStack> {
  const engine = await startEngine(engineOpts);
  const dir = mkdtempSync(join(tmpdir(), 'svc-fuzz-'));
  const children = [
    spawnBuiltin('state', engine.url, { store: 'embedded', data_dir: join(dir, 'state') }),
    spawnBuiltin('queue', engine.url, { store: 'embedded', data_dir: join(dir, 'queue'), queues }),
    spawnBuiltin('cron', engine.url, { store: 'embedded', data_dir: join(dir, 'cron') }),
    spawnBuiltin('http', engine.url, { port: 0, host: '127.0.0.1', timeout_ms: 5000, request_timeout_ms: 1500, body_limit_bytes: 64 * 1024 }),
  ];
  const assertAlive = (): void => {
    const dead = children.filter((c) => c.child.exitCode !== null || c.child.signalCode !== null);
    assert.deepEqual(
      dead.map((c) => `${c.name} exited (${c.child.exitCode ?? c.child.signalCode}): ${c.output().slice(-2000)}`),
      [],
      'every built-in worker process is alive',
    );
  };
  const http = children[3]!;
  const end = Date.now() + 20_000;
  let httpPort = 0;
  for (;;) {
    assertAlive();
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(http.output());
    if (m && ['state::get', 'queue::list', 'cron::list'].every((id) => engine.engine.registry.get(id))) {
      httpPort = Number(m[1]);
      break;
    }
    if (Date.now() > end) assert.fail(`the built-ins did not come up: ${children.map((c) => `${c.name}: ${c.output().slice(-500)}`).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    engine,
    children,
    httpPort,
    assertAlive,
    stop: async () => {
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.child.exitCode !== null || c.child.signalCode !== null) return resolve();
              c.child.once('exit', () => resolve());
              c.child.kill('SIGTERM');
            }),
        ),
      );
      await engine.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
