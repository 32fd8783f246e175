/**
 * `svc deploy kubernetes` on a project made by `svc create` (issue 26 item 3): the manifests are
 * validated offline against the Kubernetes API schemas by kubernetes-validate (PyPI, schemas in the
 * package; scripts/install-kubernetes-validate.sh), strictly (no unknown fields), for the oldest
 * release the manifests need (1.30: the preStop sleep) and the newest the package ships; and their
 * content is checked: every worker with its replicas, env, probes and the token Secret, cluster
 * mode with N engines, an external redis_url. The engine's config.yaml inside them is read by the
 * engine's own config parser.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { parseConfig, workerEntriesOf } from '../src/daemon/config-file.js';
import { ROOT, runSvc, tempDir } from './helpers/cli.js';

const run = promisify(execFile);
/** A parsed manifest object: read field by field, checked by the assertions. */
type Obj = Record<string, any>;

const WORKERS = `workers:
  - name: svc-state
    builtin: svc-state
  - name: svc-http
    builtin: svc-http
  - name: svc-queue
    builtin: svc-queue
    config:
      queues:
        emails: {max_attempts: 5}
  - name: svc-cron
    builtin: svc-cron
  - name: math-worker
    path: ./workers/math-worker
    replicas: 3
    env: {SVC_URL: ws://localhost:1, GREETING: hello}
  - name: caller-worker
    path: ./workers/caller-worker
`;

describe('svc deploy kubernetes', { timeout: 600_000 }, () => {
  const tmp = tempDir();
  const project = join(tmp.dir, 'shop');
  const config = join(project, 'config.yaml');
  let validator = '';

  before(async () => {
    // First run: a venv with kubernetes-validate from PyPI (cached afterwards).
    const { stdout } = await run('bash', [join(ROOT, 'scripts', 'install-kubernetes-validate.sh')], { maxBuffer: 1 << 24, timeout: 540_000 });
    validator = stdout.trim().split('\n').pop()!;
    const created = await runSvc(['create', '-d', project], { timeoutMs: 120_000 });
    assert.equal(created.code, 0, created.stderr);
    writeFileSync(config, readFileSync(config, 'utf8').replace('workers: []', WORKERS));
  });
  after(() => tmp.remove());

  /** Every object of every file but kustomization.yaml, by file; after validating them all. */
  async function validated(dir: string): Promise<Map<string, Obj[]>> {
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort();
    for (const version of ['1.30.0', '1.37.0']) {
      try {
        await run(validator, ['--strict', '--quiet', '-k', version, ...files], { cwd: dir });
      } catch (e) {
        const { stdout, stderr } = e as { stdout: string; stderr: string };
        assert.fail(`kubernetes-validate ${version} refused the manifests:\n${stdout}${stderr}`);
      }
    }
    const kustomization = parseAllDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as Obj;
    assert.deepEqual([...kustomization.resources].sort(), files, 'kustomization.yaml lists every file');
    return new Map(files.map((f) => [f, parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Obj)]));
  }

  const all = (m: Map<string, Obj[]>): Obj[] => [...m.values()].flat();
  const find = (m: Map<string, Obj[]>, kind: string, name: string): Obj => {
    const o = all(m).find((x) => x.kind === kind && x.metadata.name === name);
    assert.ok(o, `${kind} ${name} is generated`);
    return o;
  };
  const container = (d: Obj): Obj => d.spec.template.spec.containers[0];
  const env = (c: Obj, name: string): Obj | undefined => (c.env as Obj[]).find((e) => e.name === name);

  /** The engine's config.yaml from the ConfigMap, read by the engine's parser with what the pod's env holds. */
  function engineConfig(m: Map<string, Obj[]>, podEnv: Record<string, string>): ReturnType<typeof parseConfig> {
    const text = find(m, 'ConfigMap', 'svc-engine-config').data['config.yaml'] as string;
    const cfg = parseConfig('config.yaml', text, { SVC_ADMIN_TOKEN: 'a'.repeat(32), SVC_WORKER_TOKEN: 'w'.repeat(32), SVC_QUEUE_TOKEN: 'q'.repeat(32), SVC_CRON_TOKEN: 'c'.repeat(32), ...podEnv });
    assert.deepEqual(workerEntriesOf(cfg), [], 'the engine in the pod supervises no worker');
    return cfg;
  }

  it('one engine: every worker with its replicas, env, probes and the token Secret; valid for Kubernetes', async () => {
    mkdirSync(join(project, '.svc', 'build'), { recursive: true });
    const images = { engine: 'reg.example.com/shop/svc-engine:e1', workers: { 'math-worker': 'reg.example.com/shop/math-worker:m1', 'caller-worker': 'reg.example.com/shop/caller-worker:c1' } };
    writeFileSync(join(project, '.svc', 'build', 'images.json'), JSON.stringify(images));
    const r = await runSvc(['deploy', 'kubernetes', '--config', config]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Wrote 10 files to .*deploy\/kubernetes/);
    assert.match(r.stdout, /images: from .*images\.json \(svc build\)/);
    assert.match(r.stdout, /kubectl apply -k /);
    const dir = join(project, 'deploy', 'kubernetes');
    const m = await validated(dir);

    const secret = find(m, 'Secret', 'svc-tokens');
    for (const k of ['SVC_ADMIN_TOKEN', 'SVC_WORKER_TOKEN', 'SVC_QUEUE_TOKEN', 'SVC_CRON_TOKEN']) assert.match(secret.stringData[k], /^[A-Za-z0-9_-]{32}$/, k);
    assert.equal(new Set(Object.values(secret.stringData)).size, 4, 'four different tokens');

    const engine = find(m, 'Deployment', 'svc-engine');
    assert.equal(engine.spec.replicas, 1);
    assert.equal(engine.spec.strategy.type, 'Recreate');
    const ec = container(engine);
    assert.equal(ec.image, images.engine);
    assert.deepEqual(ec.readinessProbe.httpGet, { path: '/readyz', port: 'ws' });
    assert.deepEqual(ec.livenessProbe.httpGet, { path: '/healthz', port: 'ws' });
    assert.deepEqual(ec.lifecycle.preStop, { sleep: { seconds: 5 } });
    // preStop 5 s + shutdown_grace_ms (the template's 10 s) + 10 s to close.
    assert.equal(engine.spec.template.spec.terminationGracePeriodSeconds, 25);
    assert.ok(ec.resources.requests.cpu && ec.resources.requests.memory);
    assert.equal(env(ec, 'SVC_ADMIN_TOKEN')!.valueFrom.secretKeyRef.name, 'svc-tokens');
    assert.deepEqual(find(m, 'Service', 'svc-engine').spec.ports, [{ name: 'ws', port: 49134, targetPort: 'ws' }]);
    const cfg = engineConfig(m, {});
    assert.equal(cfg.engine.host, '0.0.0.0');
    assert.equal(cfg.engine.port, 49134);
    assert.equal(cfg.engine.shutdownGraceMs, 10_000);
    assert.equal(cfg.engine.cluster, null);
    assert.deepEqual(cfg.engine.tokens.map((t) => t.name), ['admin', 'workers', 'queue', 'cron']);

    const expected: Record<string, { replicas: number; token: string; image: string }> = {
      'svc-state': { replicas: 1, token: 'SVC_WORKER_TOKEN', image: images.engine },
      'svc-http': { replicas: 1, token: 'SVC_WORKER_TOKEN', image: images.engine },
      'svc-queue': { replicas: 1, token: 'SVC_QUEUE_TOKEN', image: images.engine },
      'svc-cron': { replicas: 1, token: 'SVC_CRON_TOKEN', image: images.engine },
      'math-worker': { replicas: 3, token: 'SVC_WORKER_TOKEN', image: images.workers['math-worker'] },
      'caller-worker': { replicas: 1, token: 'SVC_WORKER_TOKEN', image: images.workers['caller-worker'] },
    };
    for (const [name, want] of Object.entries(expected)) {
      const d = find(m, 'Deployment', name);
      const c = container(d);
      assert.equal(d.spec.replicas, want.replicas, name);
      assert.equal(c.image, want.image, name);
      assert.equal(env(c, 'SVC_URL')!.value, 'ws://svc-engine:49134', name);
      assert.deepEqual(env(c, 'SVC_TOKEN')!.valueFrom.secretKeyRef, { name: 'svc-tokens', key: want.token }, name);
      assert.equal(env(c, 'SVC_WORKER_NAME')!.value, name);
      assert.ok(c.readinessProbe, `${name} has a readiness probe`);
      assert.ok(c.resources.requests.cpu, name);
    }
    const math = container(find(m, 'Deployment', 'math-worker'));
    assert.equal(env(math, 'GREETING')!.value, 'hello');
    assert.equal(math.env.filter((e: Obj) => e.name === 'SVC_URL').length, 1, "config.yaml's SVC_URL (localhost) is not the pod's");
    assert.equal(math.readinessProbe.exec.command[0], 'python');
    assert.match(math.readinessProbe.exec.command[2], /http:\/\/svc-engine:49134\/readyz/);
    assert.equal(container(find(m, 'Deployment', 'caller-worker')).readinessProbe.exec.command[0], 'node');
    const queue = container(find(m, 'Deployment', 'svc-queue'));
    assert.deepEqual(JSON.parse(env(queue, 'SVC_WORKER_CONFIG')!.value), { queues: { emails: { max_attempts: 5 } }, store: 'redis', redis_url: '$(SVC_REDIS_URL)' });
    assert.equal(env(queue, 'SVC_REDIS_URL')!.value, 'redis://svc-redis:6379');
    const http = find(m, 'Deployment', 'svc-http');
    assert.deepEqual(JSON.parse(env(container(http), 'SVC_WORKER_CONFIG')!.value), { host: '0.0.0.0', port: 3111 });
    assert.deepEqual(find(m, 'Service', 'svc-http').spec.ports, [{ name: 'http', port: 3111, targetPort: 'http' }]);
    // Ready when connected to the engine (its ready file), alive while its port answers.
    assert.equal(env(container(http), 'SVC_READY_FILE')!.value, '/tmp/svc-ready');
    assert.equal(container(http).readinessProbe.exec.command[0], 'node');
    assert.deepEqual(container(http).livenessProbe.tcpSocket, { port: 'http' });
    const redis = container(find(m, 'Deployment', 'svc-redis'));
    assert.deepEqual(redis.args.slice(0, 3), ['redis-server', '--appendonly', 'yes']);
    find(m, 'Service', 'svc-redis');
    find(m, 'PersistentVolumeClaim', 'svc-redis-data');

    // Again, without caller-worker: the tokens stay, its file goes.
    writeFileSync(config, readFileSync(config, 'utf8').replace('  - name: caller-worker\n    path: ./workers/caller-worker\n', ''));
    const again = await runSvc(['deploy', 'kubernetes', '--config', config]);
    assert.equal(again.code, 0, again.stderr);
    const m2 = await validated(dir);
    assert.deepEqual(find(m2, 'Secret', 'svc-tokens').stringData, secret.stringData, 'a second run keeps the tokens');
    assert.ok(!existsSync(join(dir, 'worker-caller-worker.yaml')), 'a removed worker loses its manifest');
  });

  it('cluster mode: --engines 3 on the Redis backplane', async () => {
    const out = join(tmp.dir, 'cluster');
    const r = await runSvc(['deploy', 'kubernetes', '--config', config, '--engines', '3', '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    const m = await validated(out);
    const engine = find(m, 'Deployment', 'svc-engine');
    assert.equal(engine.spec.replicas, 3);
    assert.deepEqual(engine.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const c = container(engine);
    assert.equal(env(c, 'SVC_REDIS_URL')!.value, 'redis://svc-redis:6379');
    assert.deepEqual(env(c, 'SVC_NODE_ID')!.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    assert.deepEqual(env(c, 'SVC_POD_IP')!.valueFrom, { fieldRef: { fieldPath: 'status.podIP' } });
    const cfg = engineConfig(m, { SVC_REDIS_URL: 'redis://svc-redis:6379', SVC_NODE_ID: 'svc-engine-5d8f-x7k2p', SVC_POD_IP: '10.244.1.7' });
    assert.equal(cfg.engine.cluster?.redisUrl, 'redis://svc-redis:6379');
    assert.equal(cfg.engine.cluster?.nodeId, 'svc-engine-5d8f-x7k2p');
    assert.equal(cfg.engine.cluster?.advertiseUrl, 'ws://10.244.1.7:49134', 'the other engines reach this pod at its IP');
    find(m, 'Deployment', 'svc-redis');
  });

  it('an external redis_url: no Redis in the cluster, the URL in the Secret', async () => {
    const out = join(tmp.dir, 'external');
    const url = 'rediss://:s3cret@redis.example.com:6380';
    const r = await runSvc(['deploy', 'kubernetes', '--config', config, '--engines', '2', '--redis-url', url, '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('s3cret'), 'the password is not printed');
    assert.match(r.stdout, /redis: rediss:\/\/\*\*\*@redis\.example\.com:6380/);
    const m = await validated(out);
    assert.ok(!all(m).some((o) => o.metadata.name === 'svc-redis'), 'no Redis in the cluster');
    assert.equal(find(m, 'Secret', 'svc-tokens').stringData.SVC_REDIS_URL, url);
    for (const name of ['svc-engine', 'svc-state', 'svc-queue', 'svc-cron']) {
      assert.deepEqual(env(container(find(m, 'Deployment', name)), 'SVC_REDIS_URL')!.valueFrom.secretKeyRef, { name: 'svc-tokens', key: 'SVC_REDIS_URL' }, name);
    }
    assert.ok(!readFileSync(join(out, 'engine.yaml'), 'utf8').includes('s3cret'), 'the password is only in the Secret');
  });

  it('without images.json: the agreed names with a placeholder tag, and says to run svc build; --secret names an existing Secret', async () => {
    const bare = join(tmp.dir, 'bare');
    mkdirSync(bare);
    writeFileSync(join(bare, 'config.yaml'), `engine:\n  shutdown_grace_ms: 30000\ndeploy:\n  registry: reg.example.com/team\n${WORKERS.replace(/ {2}- name: (math|caller)-worker[\s\S]*/, '')}`);
    const r = await runSvc(['deploy', 'kubernetes', '--config', join(bare, 'config.yaml'), '--secret', 'prod-tokens']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /no \.svc\/build\/images\.json, so the images are named reg\.example\.com\/team\/<name>:run-svc-build: run `svc build` first, or pass --image-tag/);
    const m = await validated(join(bare, 'deploy', 'kubernetes'));
    assert.ok(!all(m).some((o) => o.kind === 'Secret'), 'no Secret generated');
    const engine = find(m, 'Deployment', 'svc-engine');
    assert.equal(container(engine).image, 'reg.example.com/team/svc-engine:run-svc-build');
    assert.equal(engine.spec.template.spec.terminationGracePeriodSeconds, 45);
    assert.equal(env(container(find(m, 'Deployment', 'svc-state')), 'SVC_TOKEN')!.valueFrom.secretKeyRef.name, 'prod-tokens');
    const tagged = await runSvc(['deploy', 'kubernetes', '--config', join(bare, 'config.yaml'), '--image-tag', 'v7', '--registry', 'other.example.com']);
    assert.equal(tagged.code, 0, tagged.stderr);
    assert.match(readFileSync(join(bare, 'deploy', 'kubernetes', 'engine.yaml'), 'utf8'), /image: other\.example\.com\/svc-engine:v7/);

    // Switching to --secret after a run generated tokens: the generated secret.yaml (maybe deployed) is kept, not applied.
    const out = join(bare, 'deploy', 'kubernetes');
    const generated = find(await validated(out), 'Secret', 'svc-tokens').stringData;
    const switched = await runSvc(['deploy', 'kubernetes', '--config', join(bare, 'config.yaml'), '--secret', 'prod-tokens']);
    assert.equal(switched.code, 0, switched.stderr);
    assert.ok(existsSync(join(out, 'secret.yaml')), '--secret does not delete the generated tokens');
    assert.match(switched.stdout, /secret\.yaml \(tokens of an earlier run\) is kept but no longer applied/);
    assert.ok(!readFileSync(join(out, 'kustomization.yaml'), 'utf8').includes('secret.yaml'), 'the kept secret.yaml is not applied');
    const back = await runSvc(['deploy', 'kubernetes', '--config', join(bare, 'config.yaml')]);
    assert.equal(back.code, 0, back.stderr);
    assert.deepEqual(find(await validated(out), 'Secret', 'svc-tokens').stringData, generated, 'a run without --secret uses the kept tokens again');
  });

  it('refuses what it cannot map, naming it', async () => {
    const bad = join(tmp.dir, 'bad');
    mkdirSync(join(bad, '.svc', 'build'), { recursive: true });
    writeFileSync(join(bad, 'config.yaml'), 'workers:\n  - name: svc-redis\n    builtin: svc-state\n');
    let r = await runSvc(['deploy', 'kubernetes', '--config', join(bad, 'config.yaml')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: k8s_name_conflict: worker svc-redis: its Kubernetes name svc-redis is also Redis's/);
    writeFileSync(join(bad, 'config.yaml'), 'workers: []\n');
    writeFileSync(join(bad, '.svc', 'build', 'images.json'), '{"engine": 1}');
    r = await runSvc(['deploy', 'kubernetes', '--config', join(bad, 'config.yaml')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: invalid_images_file: .*images\.json: must be \{"engine"/);
    writeFileSync(join(bad, 'config.yaml'), 'workers:\n  - name: w\n    builtin: svc-state\n    replcas: 2\n');
    r = await runSvc(['deploy', 'kubernetes', '--config', join(bad, 'config.yaml')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /workers\[0\]\.replcas/);
    // A mistyped section was skipped without a word (the generator read config.yaml on its own); now as everywhere else.
    writeFileSync(join(bad, 'config.yaml'), 'worker:\n  - name: w\n    builtin: svc-state\n');
    r = await runSvc(['deploy', 'kubernetes', '--config', join(bad, 'config.yaml')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /worker: .*did you mean "workers"/);
    writeFileSync(join(bad, 'config.yaml'), 'workers:\n  - name: w\n    builtin: svc-state\n    replcas: 2\n');
    r = await runSvc(['deploy', 'kubernetes', '--config', join(bad, 'config.yaml'), '--redis-url', 'http://x']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: invalid_argument: svc deploy kubernetes: --redis-url: must start with redis:\/\//);
  });

  it('a project with no workers yet (svc create, before svc worker add): the engine alone, and says how to add them', async () => {
    const fresh = join(tmp.dir, 'fresh');
    mkdirSync(fresh);
    writeFileSync(join(fresh, 'config.yaml'), 'engine:\n  port: 49134\nworkers: []\n');
    const r = await runSvc(['deploy', 'kubernetes', '--config', join(fresh, 'config.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /workers: none in config\.yaml, so only the engine is written; add them with `svc worker add`/);
    await validated(join(fresh, 'deploy', 'kubernetes'));
  });
});
