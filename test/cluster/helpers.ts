/**
 * Cluster tests: several engines sharing one private redis-server. In-process engines for the
 * routing tests; child processes (`node bin/svc.js --config …`) where an engine must die by SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerWorker, type Worker } from 'svc-sdk';
import { Engine } from '../../src/engine/server.js';
import type { EngineOptions } from '../../src/engine/options.js';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const SVC_BIN = join(REPO, 'bin', 'svc.js');

/** Workers on any engine of a test's cluster, reconnecting quickly; shutdownAll() in `after`. */
export function clusterWorkers(): { make(url: string, name: string): Worker; shutdownAll(): Promise<void> } {
  const workers: Worker[] = [];
  return {
    make: (url, name) => {
      const w = registerWorker(url, { workerName: name, echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
      workers.push(w);
      return w;
    },
    shutdownAll: async () => {
      await Promise.all(workers.map((w) => w.shutdown()));
    },
  };
}

/** Short leases so that failure tests run in seconds. */
export const TEST_LEASE_MS = 1500;

export interface ClusterEngine {
  url: string;
  engine: Engine;
  stop(): Promise<void>;
}

export async function startClusterEngine(redisUrl: string, nodeId: string, prefix: string, opts: Partial<EngineOptions> = {}): Promise<ClusterEngine> {
  const engine = new Engine({
    host: '127.0.0.1',
    port: 0,
    printEvents: false,
    shutdownGraceMs: 500,
    cluster: { redisUrl, nodeId, leaseMs: TEST_LEASE_MS, prefix },
    ...opts,
  });
  const a = await engine.start();
  return { url: a.url, engine, stop: () => engine.stop() };
}

export interface EngineProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** `svc --config` in its own directory with a cluster block; resolves once it prints its ready line. */
export async function spawnClusterEngine(redisUrl: string, nodeId: string, prefix: string, extraYaml = ''): Promise<EngineProcess> {
  const dir = mkdtempSync(join(tmpdir(), `svc-cluster-${nodeId}-`));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `engine:\n  host: 127.0.0.1\n  port: 0\n  shutdown_grace_ms: 500\n  cluster:\n    redis_url: ${redisUrl}\n    node_id: ${nodeId}\n    lease_ms: ${TEST_LEASE_MS}\n    prefix: ${prefix}\n${extraYaml}`,
  );
  const child = spawn(process.execPath, [SVC_BIN, '--config', config], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolvePromise, reject) => {
    const t = setTimeout(() => reject(new Error(`engine ${nodeId} did not start within 20 s:\n${out}`)), 20_000);
    const check = (): void => {
      const m = /svc engine ready on (ws:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        child.stdout!.off('data', check);
        resolvePromise(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`engine ${nodeId} exited with ${code}:\n${out}`));
    });
  });
  child.removeAllListeners('exit');
  return {
    url,
    child,
    output: () => out,
    kill: (signal = 'SIGKILL') =>
      new Promise<void>((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res();
        child.once('exit', () => res());
        child.kill(signal);
      }),
  };
}
