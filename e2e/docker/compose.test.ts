/**
 * docker-compose.yml as a user runs it: `up -d` brings the stack (engine, Redis, svc-state,
 * svc-http, svc-queue, svc-cron, math-worker x2, caller-worker, console), the quickstart HTTP call answers, an
 * enqueue through svc-queue (Redis store) runs, the built-ins hold their own names, a cron binding
 * fires through svc-cron (whose token may call none of the functions it fires), `down` leaves
 * nothing running. Ports are moved off the defaults so a developer's own engine is safe.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { registerWorker } from 'svc-sdk';
import { composeCommand, dockerSkipReason } from '../../test/helpers/docker.js';
import { closedPort, ROOT, runSvc, until } from '../helpers/cli.js';

const docker = new Docker({ socketPath: '/var/run/docker.sock' });
const hasImage = async (ref: string): Promise<boolean> => docker.getImage(ref).inspect().then(() => true, () => false);

let skip = await dockerSkipReason();
const compose = composeCommand();
if (!skip && !compose) {
  if (process.env.CI === 'true') throw new Error('neither `docker compose` nor `docker-compose` is installed (scripts/install-system-deps.sh installs docker-compose)');
  skip = 'neither `docker compose` nor `docker-compose` is installed';
  process.stdout.write(`# skipping compose test: ${skip}\n`);
}

describe('docker compose up: the whole stack', { skip, timeout: 1_200_000 }, () => {
  const project = `svc-e2e-${process.pid}`;
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOCKER_BUILDKIT: '0', COMPOSE_DOCKER_CLI_BUILD: '0' };
  const run = (args: string[], timeoutMs = 900_000): string => {
    const [cmd, ...pre] = compose!;
    return execFileSync(cmd!, [...pre, '-p', project, '-f', 'docker-compose.yml', ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] });
  };
  const running = async (): Promise<string[]> =>
    (await docker.listContainers({ all: true, filters: { label: [`com.docker.compose.project=${project}`] } })).map((c) => `${c.Names[0]} ${c.State}`);

  before(async () => {
    // Official base images when this machine has them, else the offline equivalents.
    env.NODE_BASE = (await hasImage('node:20-bookworm-slim')) ? 'node:20-bookworm-slim' : 'svc-base-node:local';
    env.PYTHON_BASE = (await hasImage('python:3.11-slim-bookworm')) ? 'python:3.11-slim-bookworm' : 'svc-base-python:local';
    env.REDIS_IMAGE = (await hasImage('redis:7-bookworm')) ? 'redis:7-bookworm' : 'svc-redis:local';
    env.SVC_PORT = String(await closedPort());
    env.SVC_HTTP_PORT = String(await closedPort());
    env.SVC_CONSOLE_PORT = String(await closedPort());
    env.SVC_REDIS_PORT = String(await closedPort());
  });

  after(() => {
    try {
      run(['down', '-v', '--remove-orphans'], 120_000);
    } catch {
      /* reported by the test */
    }
  });

  it('up -d serves the quickstart over HTTP with a running total; down leaves nothing running', async () => {
    const t0 = Date.now();
    try {
      run(['up', '-d', '--build']);
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      assert.fail(`compose up failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
    }
    process.stdout.write(`# compose up -d --build: ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    const states = await running();
    assert.equal(states.filter((s) => / running$/.test(s)).length, 10, `expected 10 running containers: ${states.join(', ')}`);
    assert.equal(states.filter((s) => /math-worker/.test(s)).length, 2, 'math-worker runs 2 replicas');
    const url = `http://127.0.0.1:${env.SVC_HTTP_PORT}/math/add-two-numbers`;
    const res = await until('the quickstart HTTP endpoint to answer 200', async () => {
      try {
        const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 2, b: 3 }) });
        return r.status === 200 ? r : undefined;
      } catch {
        return undefined;
      }
    }, 120_000);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const body = (await res.json()) as { c: number; running_total: number };
    assert.equal(body.c, 5);
    assert.equal(typeof body.running_total, 'number');
    const again = (await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1, b: 1 }) })).json()) as { c: number; running_total: number };
    assert.equal(again.c, 2);
    assert.equal(again.running_total, body.running_total + 2);
    // The console starts with the rest and may still be on its way up on a busy machine.
    const consolePage = await until('the console to answer', () => fetch(`http://127.0.0.1:${env.SVC_CONSOLE_PORT}/`).catch(() => undefined), 60_000);
    assert.equal(consolePage.status, 200);

    // svc-queue on Redis: an enqueue through the stack is stored and run (math::add adds to the total).
    const admin = { SVC_URL: `ws://127.0.0.1:${env.SVC_PORT}`, SVC_TOKEN: 'svc-compose-admin-token-change-me' };
    const enqueued = await until('svc-queue to take an enqueue', async () => {
      const r = await runSvc(['trigger', '--enqueue', 'default', 'math::add', 'a=10', 'b=0'], { env: admin });
      return r.code === 0 ? r.stdout : undefined;
    }, 60_000);
    assert.match(enqueued, /"messageReceiptId":"[0-9a-f-]{36}"/);
    await until('the job to run', async () => {
      const r = await runSvc(['queue', 'list', '--json'], { env: admin });
      const q = r.code === 0 ? (JSON.parse(r.stdout) as { queues: Array<{ queue: string; completed: number }> }).queues.find((x) => x.queue === 'default') : undefined;
      return (q?.completed ?? 0) >= 1;
    }, 30_000);

    // The built-ins run outside the supervisor here, each under its own name (granted to its token).
    await until('the built-ins under their own names', async () => {
      const r = await runSvc(['trigger', 'engine::workers::list'], { env: admin });
      if (r.code !== 0) return undefined;
      const names = (JSON.parse(r.stdout) as { workers: Array<{ name: string }> }).workers.map((w) => w.name);
      return ['svc-state', 'svc-http', 'svc-queue', 'svc-cron'].every((n) => names.includes(n));
    }, 30_000);
    // svc-cron's token may call none of the functions it fires: a fire runs with its binder's rights.
    const ticker = registerWorker(admin.SVC_URL, { workerName: 'compose-ticker', token: 'svc-compose-worker-token-change-me', echoLogs: false });
    try {
      let fires = 0;
      ticker.registerFunction('compose::tick', () => void fires++);
      await ticker.registerTrigger({ type: 'cron', function_id: 'compose::tick', config: { expression: '* * * * * *' } });
      await until('a cron fire', () => fires > 0, 15_000);
    } finally {
      await ticker.shutdown();
    }

    run(['down', '-v'], 120_000);
    assert.deepEqual(await running(), [], 'containers left after compose down');
  });
});
