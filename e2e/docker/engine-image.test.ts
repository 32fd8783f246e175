/**
 * The engine image in a container, Redis in a container, and the quickstart workers added with the
 * docker runtime (math-worker x2), all with testcontainers on local images only (no registry:
 * scripts/build-base-images.sh and scripts/test.sh build them).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { createClient } from 'redis';
import { registerWorker, type Worker } from 'svc-sdk';
import { projectLabel } from '../../src/supervisor/docker-runtime.js';
import { dockerSkipReason } from '../../test/helpers/docker.js';
import { closedPort, runSvc, tempDir, until } from '../helpers/cli.js';

// No registry: the Ryuk reaper image cannot be pulled (containers are stopped in after()), and
// there is no bridge network for testcontainers to find the Docker host's address on.
process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
const { GenericContainer, Wait } = await import('testcontainers');
type Started = Awaited<ReturnType<InstanceType<typeof GenericContainer>['start']>>;

const ENGINE_IMAGE = process.env.SVC_ENGINE_IMAGE ?? 'svc-engine:test';
const REDIS_IMAGE = process.env.SVC_REDIS_IMAGE ?? 'svc-redis:local';
const skip = await dockerSkipReason([ENGINE_IMAGE, REDIS_IMAGE]);
const docker = new Docker({ socketPath: '/var/run/docker.sock' });

interface Call {
  start: number;
  end: number;
  ok: boolean;
  code?: string;
  total?: number;
}

describe('engine image + docker runtime + Redis', { skip, timeout: 900_000 }, () => {
  const tmp = tempDir();
  const proj = join(tmp.dir, 'proj');
  const config = join(proj, 'config.yaml');
  let redis: Started;
  let engine: Started;
  let caller: Worker;
  let redisPort = 0;
  const mathContainers = async (): Promise<Docker.ContainerInfo[]> =>
    (await docker.listContainers({ filters: { label: [`svc.worker=math-worker`, `svc.project=${projectLabel(config)}`] } })).sort((a, b) =>
      a.Labels['svc.replica']!.localeCompare(b.Labels['svc.replica']!),
    );
  const callsIn = async (id: string): Promise<number> => {
    const out = (await docker.getContainer(id).logs({ stdout: true, stderr: true })).toString('utf8');
    return out.split('adding a=').length - 1;
  };
  const redisTotal = async (): Promise<number> => {
    const c = createClient({ url: `redis://127.0.0.1:${redisPort}` });
    await c.connect();
    try {
      const v = await c.hGet('svc:state:scope:math', 'running_total');
      return v === null || v === undefined ? 0 : Number(JSON.parse(String(v)));
    } finally {
      await c.quit();
    }
  };
  const exec = async (cmd: string[]): Promise<string> => {
    const r = await engine.exec(cmd, { workingDir: proj });
    assert.equal(r.exitCode, 0, `${cmd.join(' ')} failed:\n${r.output}`);
    return r.output;
  };

  before(async () => {
    const created = await runSvc(['create', '-d', proj], { timeoutMs: 60_000 });
    assert.equal(created.code, 0, created.stderr);
    redisPort = await closedPort();
    const enginePort = await closedPort();
    const httpPort = await closedPort();
    writeFileSync(
      config,
      `engine:\n  host: 127.0.0.1\n  port: ${enginePort}\nworkers:\n` +
        `  - name: svc-state\n    builtin: svc-state\n    config:\n      store: redis\n      redis_url: redis://127.0.0.1:${redisPort}\n` +
        `  - name: svc-http\n    builtin: svc-http\n    config:\n      port: ${httpPort}\n`,
    );
    redis = await new GenericContainer(REDIS_IMAGE)
      .withNetworkMode('host')
      .withCommand(['redis-server', '--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--protected-mode', 'no'])
      .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
      .start();
    engine = await new GenericContainer(ENGINE_IMAGE)
      .withNetworkMode('host')
      .withBindMounts([
        { source: proj, target: proj, mode: 'rw' },
        { source: '/var/run/docker.sock', target: '/var/run/docker.sock', mode: 'rw' },
      ])
      .withWorkingDir(proj)
      .withCommand(['start', '--config', config])
      .withWaitStrategy(Wait.forLogMessage(/svc engine ready on ws:\/\//))
      .withStartupTimeout(60_000)
      .start();
    const url = `ws://127.0.0.1:${enginePort}`;
    caller = registerWorker(url, { workerName: 'e2e-caller', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 500 } });
  });

  after(async () => {
    await caller?.shutdown().catch(() => undefined);
    // Stopping the engine container must stop and remove every worker container it started.
    await engine?.stop({ timeout: 30_000 }).catch(() => undefined);
    const left = await docker.listContainers({ all: true, filters: { label: [`svc.project=${projectLabel(config)}`] } });
    await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
    await redis?.stop().catch(() => undefined);
    tmp.remove();
    assert.deepEqual(left.map((c) => c.Names[0]), [], 'worker containers left behind after the engine stopped');
  });

  it('adds the quickstart workers as containers (math-worker x2) and calls work', async () => {
    const math = await exec(['svc', 'worker', 'add', './workers/math-worker', '--runtime', 'docker', '--replicas', '2']);
    assert.match(math, /auto-started \(containers [0-9a-f]{12}, [0-9a-f]{12}\)/, 'both replicas named');
    const call = await exec(['svc', 'worker', 'add', './workers/caller-worker', '--runtime', 'docker']);
    assert.match(call, /auto-started \(container [0-9a-f]{12}\)/);
    const list = await exec(['svc', 'worker', 'list']);
    assert.match(list, /math-worker\s+directory\s+docker x2/);
    assert.equal((await mathContainers()).length, 2);
    const r = await until('math::add_two_numbers to answer', async () => {
      try {
        return (await caller.trigger({ function_id: 'math::add_two_numbers', payload: { a: 2, b: 3 }, timeoutMs: 10_000 })) as { c: number; running_total: number };
      } catch {
        return undefined;
      }
    }, 60_000);
    assert.equal(r.c, 5);
    assert.equal(r.running_total, 5);
    // svc worker logs reads what the containers printed.
    const logs = readFileSync(join(proj, '.svc', 'logs', 'math-worker.log'), 'utf8');
    assert.match(logs, /starting math-worker \[replica 1\]: container/);
    assert.match(logs, /adding a=2 and b=3/);
  });

  it('balances calls over both replicas; the running total is exact and stored in Redis', async () => {
    let expected = await redisTotal();
    for (let i = 0; i < 40; i += 4) {
      const rs = await Promise.all([0, 1, 2, 3].map((j) => caller.trigger({ function_id: 'math::add', payload: { a: i + j, b: 1 } }) as Promise<{ c: number }>));
      for (const [j, r] of rs.entries()) assert.equal(r.c, i + j + 1);
      expected += rs.reduce((s, r) => s + r.c, 0);
    }
    assert.equal(await redisTotal(), expected);
    const [r0, r1] = await mathContainers();
    assert.ok((await callsIn(r0!.Id)) > 0, 'replica 0 served no call');
    assert.ok((await callsIn(r1!.Id)) > 0, 'replica 1 served no call');
  });

  it('docker kill of one replica loses no call not yet sent to it, and the replica comes back', async () => {
    const before = await mathContainers();
    const victim = before.find((c) => c.Labels['svc.replica'] === '1')!;
    const totalBefore = await redisTotal();
    const calls: Call[] = [];
    let stop = false;
    const loop = async (): Promise<void> => {
      while (!stop) {
        const c: Call = { start: Date.now(), end: 0, ok: false };
        try {
          const r = (await caller.trigger({ function_id: 'math::add', payload: { a: 1, b: 0 }, timeoutMs: 10_000 })) as { c: number; running_total: number };
          c.ok = r.c === 1;
          c.total = r.running_total;
        } catch (e) {
          c.code = (e as { code?: string }).code ?? String(e);
        }
        c.end = Date.now();
        calls.push(c);
      }
    };
    const CONCURRENCY = 4;
    const loops = Array.from({ length: CONCURRENCY }, loop);
    await new Promise((r) => setTimeout(r, 1500));
    const killAt = Date.now();
    await docker.getContainer(victim.Id).kill();
    const killed = Date.now();
    const back = await until('replica 1 to come back as a new container', async () => {
      const now = await mathContainers();
      return now.find((c) => c.Labels['svc.replica'] === '1' && c.Id !== victim.Id && c.State === 'running');
    }, 60_000);
    // Load keeps going until the new replica serves calls too.
    await until('the new replica to serve calls', async () => (await callsIn(back.Id)) > 0, 60_000);
    stop = true;
    await Promise.all(loops);

    const failed = calls.filter((c) => !c.ok);
    const ok = calls.filter((c) => c.ok);
    process.stdout.write(`# docker kill: ${ok.length} calls succeeded, ${failed.length} failed (${failed.map((f) => f.code).join(', ') || 'none'})\n`);
    assert.ok(ok.length > 20, `only ${ok.length} calls succeeded`);
    // Only calls in flight on the killed replica may fail, and with the documented code.
    assert.ok(failed.length <= CONCURRENCY, `${failed.length} calls failed: ${JSON.stringify(failed)}`);
    for (const f of failed) {
      assert.equal(f.code, 'invocation_stopped', JSON.stringify(f));
      assert.ok(f.start <= killed + 250, `a call started ${f.start - killed} ms after the kill failed: ${JSON.stringify(f)}`);
    }
    assert.ok(killAt <= killed);
    // Exact total: every successful call counted once; a call lost with its replica counted at most once.
    const total = await redisTotal();
    assert.ok(total >= totalBefore + ok.length && total <= totalBefore + ok.length + failed.length, `total ${total}, before ${totalBefore}, ok ${ok.length}, failed ${failed.length}`);
    const last = (await caller.trigger({ function_id: 'math::add', payload: { a: 2, b: 3 } })) as { running_total: number };
    assert.equal(last.running_total, total + 5);
    assert.equal(await redisTotal(), total + 5);
    const list = await exec(['svc', 'worker', 'list']);
    assert.match(list, /math-worker\s+directory\s+docker x2\s+\S+\s+running\s+1\b/);
  });
});
