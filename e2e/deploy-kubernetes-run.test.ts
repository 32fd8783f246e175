/**
 * The manifests of `svc deploy kubernetes --engines 2` run: two engines started as their pods would
 * be (the ConfigMap's config.yaml, the Deployment's args and env, each pod's name as SVC_NODE_ID)
 * and the built-in workers with their Deployments' command and env (tokens from the Secret,
 * Kubernetes' $(VAR) references expanded), on a real redis-server instead of the svc-redis Service
 * and loopback instead of the svc-engine Service. They join one cluster, the built-ins connect with
 * their roles' tokens, and a call made on one engine reaches svc-state on the other.
 */
import { strict as assert } from 'node:assert';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { registerWorker, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../test/workers/state/redis-server.js';
import { freePort } from '../test/helpers/util.js';
import { ROOT, runSvc, tempDir, until } from './helpers/cli.js';

/** A parsed manifest object: read field by field. */
type Obj = Record<string, any>;

/** A container's environment as the kubelet makes it: Secret keys, the pod's name, $(VAR) of earlier variables; `replace` stands in for cluster addresses. */
function podEnv(container: Obj, secret: Record<string, string>, podName: string, replace: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env as Obj[]) {
    let value: string;
    if (e.valueFrom?.secretKeyRef) value = secret[e.valueFrom.secretKeyRef.key as string]!;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') value = podName;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'status.podIP') value = '127.0.0.1';
    else value = (e.value as string).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name: string) => env[name] ?? m);
    assert.ok(value !== undefined, `env ${e.name} resolves`);
    env[e.name as string] = replace[e.name as string] ?? value;
  }
  return env;
}

describe('svc deploy kubernetes: the pods run', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const children: ChildProcess[] = [];
  const workers: Worker[] = [];
  let redis: RedisServer;
  const objects: Obj[] = [];
  let output = '';

  const find = (kind: string, name: string): Obj => objects.find((o) => o.kind === kind && o.metadata.name === name)!;

  before(async () => {
    redis = await startRedis();
    writeFileSync(
      join(tmp.dir, 'config.yaml'),
      'engine:\n  shutdown_grace_ms: 2000\nworkers:\n  - name: svc-state\n    builtin: svc-state\n  - name: svc-queue\n    builtin: svc-queue\n    config:\n      queues:\n        emails: {}\n  - name: svc-cron\n    builtin: svc-cron\n',
    );
    const r = await runSvc(['deploy', 'kubernetes', '--config', join(tmp.dir, 'config.yaml'), '--engines', '2']);
    assert.equal(r.code, 0, r.stderr);
    const dir = join(tmp.dir, 'deploy', 'kubernetes');
    for (const f of ['engine.yaml', 'secret.yaml', 'worker-svc-state.yaml', 'worker-svc-queue.yaml', 'worker-svc-cron.yaml']) {
      objects.push(...parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Obj));
    }
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown(0)));
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await redis?.stop();
    tmp.remove();
  });

  const ports: number[] = [];
  const engines: ChildProcess[] = [];
  /** Each pod's /tmp/svc-ready, here a file of its own. */
  const readyFile = (name: string): string => join(tmp.dir, `${name}.ready`);

  /** A Deployment's readiness probe run as the kubelet would, in the pod: its exit code. */
  function runProbe(name: string, enginePort: number): Promise<number> {
    const [bin, ...args] = (find('Deployment', name).spec.template.spec.containers[0] as Obj).readinessProbe.exec.command as string[];
    const script = args.map((a) => a.replaceAll('/tmp/svc-ready', readyFile(name)).replaceAll('http://svc-engine:49134', `http://127.0.0.1:${enginePort}`));
    return new Promise((resolve) => execFile(bin === 'node' ? process.execPath : bin!, script, { timeout: 10_000 }, (err) => resolve(err ? Number(err.code ?? 99) : 0)));
  }

  function spawnPod(command: string[], env: Record<string, string>, cwd: string): ChildProcess {
    const [bin, ...args] = command.map((a) => a.replace(/^\/opt\/svc\//, `${ROOT}`));
    const { SVC_URL: _drop, ...inherited } = process.env;
    const child = spawn(bin === 'node' ? process.execPath : bin!, args, { cwd, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    // What it printed, shown when the test fails.
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
    return child;
  }

  it('two engines from the ConfigMap join one cluster, the built-ins connect with their tokens, a call crosses engines', async () => {
    const secret = find('Secret', 'svc-tokens').stringData as Record<string, string>;
    const engine = find('Deployment', 'svc-engine').spec.template.spec.containers[0] as Obj;
    for (const pod of ['svc-engine-7c9d-abcde', 'svc-engine-7c9d-fghij']) {
      // Each pod has its own /project.
      const project = join(tmp.dir, pod);
      mkdirSync(project);
      writeFileSync(join(project, 'config.yaml'), find('ConfigMap', 'svc-engine-config').data['config.yaml'] as string);
      const port = await freePort();
      ports.push(port);
      const args = (engine.args as string[]).map((a) => (a === '/project/config.yaml' ? join(project, 'config.yaml') : a));
      engines.push(spawnPod(['node', join(ROOT, 'bin', 'svc.js'), ...args, '--port', String(port)], podEnv(engine, secret, pod, { SVC_REDIS_URL: redis.url }), project));
    }
    for (const port of ports) {
      await until(`engine on ${port} ready`, async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status === 200 || null, 20_000).catch((e: Error) => assert.fail(`${e.message}\n${output}`));
    }
    const builtins: Array<[string, number]> = [['svc-state', ports[1]!], ['svc-queue', ports[0]!], ['svc-cron', ports[1]!]];
    for (const [name, port] of builtins) {
      const c = find('Deployment', name).spec.template.spec.containers[0] as Obj;
      spawnPod(c.command as string[], podEnv(c, secret, `${name}-1`, { SVC_URL: `ws://127.0.0.1:${port}`, SVC_REDIS_URL: redis.url, SVC_READY_FILE: readyFile(name) }), tmp.dir);
    }
    const admin = registerWorker(`ws://127.0.0.1:${ports[0]}`, { workerName: 'operator', token: secret.SVC_ADMIN_TOKEN, echoLogs: false });
    workers.push(admin);
    await admin.ready();
    await until('svc-state reachable from the other engine', async () => {
      const r = await admin.trigger({ function_id: 'state::set', payload: { scope: 'k8s', key: 'k', value: 42 } }).catch(() => null);
      return r ?? null;
    }, 20_000);
    assert.equal(await admin.trigger({ function_id: 'state::get', payload: { scope: 'k8s', key: 'k' } }), 42);
    await until('svc-queue and svc-cron connected', async () => {
      const names = (await admin.trigger<{ workers: Array<{ name: string }> }>({ function_id: 'engine::workers::list' })).workers.map((w) => w.name);
      return names.includes('svc-queue') && names.includes('svc-cron');
    }, 20_000).catch((e: Error) => assert.fail(`${e.message}\n${output}`));
    const listed = (await admin.trigger<{ workers: Array<{ name: string; engine?: string }> }>({ function_id: 'engine::workers::list' })).workers;
    for (const name of ['svc-state', 'svc-queue', 'svc-cron']) assert.ok(listed.some((w) => w.name === name), `${name} connected: ${JSON.stringify(listed.map((w) => w.name))}`);
    assert.ok(new Set(listed.map((w) => w.engine)).size >= 2, 'workers on both engines');
  });

  it("the workers' readiness probes pass while connected and fail once their engine is gone", async () => {
    for (const name of ['svc-state', 'svc-queue', 'svc-cron']) {
      assert.equal(readFileSync(readyFile(name), 'utf8'), `ready ${name}\n`);
      assert.equal(await runProbe(name, ports[0]!), 0, `${name} ready`);
    }
    // The engine of svc-state and svc-cron goes; svc-queue's stays.
    engines[1]!.kill('SIGKILL');
    await until('svc-state and svc-cron not ready', async () => ((await runProbe('svc-state', ports[0]!)) !== 0 && (await runProbe('svc-cron', ports[0]!)) !== 0) || null, 20_000);
    assert.equal(await runProbe('svc-queue', ports[0]!), 0, 'svc-queue still ready');
  });
});
