/**
 * Issue 26's acceptance for portable projects and `svc build`: the quickstart made by `svc create`
 * becomes images with `svc build` (the engine and one per worker, content-hash tags under a
 * registry prefix); a second run builds nothing; `--save` writes a tarball `docker load` reads.
 * The worker images are clean containers from the offline base images holding only the worker's
 * directory (no .venv, node_modules, .svc, no svc checkout): they install the SDK from the vendored
 * packages, and with the engine run from its image they answer the quickstart's calls, over
 * WebSocket and HTTP.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { registerWorker, type Worker } from 'svc-sdk';
import { dockerSkipReason } from '../../test/helpers/docker.js';
import { closedPort, runSvc, tempDir, until } from '../helpers/cli.js';

const skip = await dockerSkipReason(['svc-base-python:local', 'svc-base-node:local']);
const docker = new Docker({ socketPath: '/var/run/docker.sock' });
const BUILD_MS = 1_200_000;

describe('svc build: the quickstart as images', { skip, timeout: 2 * BUILD_MS }, () => {
  const tmp = tempDir();
  const proj = join(tmp.dir, 'proj');
  // A prefix of its own: the tags this test makes are removed at the end, Docker's layers stay cached.
  const prefix = `localhost:5000/svc-e2e-${randomBytes(4).toString('hex')}/`;
  const other = `localhost:5000/svc-e2e-${randomBytes(4).toString('hex')}-other/`;
  const containers: Docker.Container[] = [];
  let images: { engine: string; workers: Record<string, string> };
  let caller: Worker | undefined;

  before(async () => {
    const created = await runSvc(['create', '-d', proj], { timeoutMs: 120_000 });
    assert.equal(created.code, 0, created.stderr);
    writeFileSync(
      join(proj, 'config.yaml'),
      'deploy:\n  registry: registry.invalid/overridden\nworkers:\n' +
        '  - name: svc-state\n    builtin: svc-state\n  - name: svc-http\n    builtin: svc-http\n' +
        '  - name: math-worker\n    path: ./workers/math-worker\n  - name: caller-worker\n    path: ./workers/caller-worker\n',
    );
  });

  after(async () => {
    await caller?.shutdown().catch(() => undefined);
    await Promise.all(containers.map((c) => c.remove({ force: true }).catch(() => undefined)));
    const ours = (await docker.listImages()).flatMap((i) => i.RepoTags ?? []).filter((t) => t.startsWith(prefix) || t.startsWith(other));
    for (const t of ours) await docker.getImage(t).remove({ force: true }).catch(() => undefined);
    tmp.remove();
  });

  it('builds the engine and each worker with a directory, tagged <prefix><name>:<hash>, and writes .svc/build/images.json', async () => {
    const r = await runSvc(['build', '--registry', prefix.slice(0, -1)], { cwd: proj, timeoutMs: BUILD_MS });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr.slice(-4000)}`);
    images = JSON.parse(readFileSync(join(proj, '.svc/build/images.json'), 'utf8')) as typeof images;
    const hex = '[0-9a-f]{16}';
    assert.match(images.engine, new RegExp(`^${prefix}svc-engine:${hex}$`));
    assert.deepEqual(Object.keys(images.workers).sort(), ['caller-worker', 'math-worker']);
    for (const [name, ref] of Object.entries(images.workers)) assert.match(ref, new RegExp(`^${prefix}${name}:${hex}$`));
    for (const ref of [images.engine, ...Object.values(images.workers)]) {
      await docker.getImage(ref).inspect();
      assert.ok(r.stdout.includes(ref), `${ref} not printed:\n${r.stdout}`);
    }
    // Built, or tagged from an image of the same content another run or test left under another name.
    const counts = /(\d) built, (\d) tagged, 0 unchanged/.exec(r.stdout);
    assert.ok(counts && Number(counts[1]) + Number(counts[2]) === 3, r.stdout);
    assert.match(r.stdout, /svc-state\s+-\s+skipped: built in \(svc-state\): runs from the engine image/);
    assert.match(r.stdout, /docker push/);
  });

  it('a second run builds nothing; --save writes the images to a tarball docker load reads', async () => {
    const tarball = join(tmp.dir, 'images.tar');
    const r = await runSvc(['build', '--registry', prefix, '--save', tarball], { cwd: proj, timeoutMs: BUILD_MS });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr.slice(-4000)}`);
    assert.match(r.stdout, /0 built, 0 tagged, 3 unchanged/);
    assert.doesNotMatch(r.stderr, /building image/);
    assert.deepEqual(JSON.parse(readFileSync(join(proj, '.svc/build/images.json'), 'utf8')), images, 'the same references');
    assert.ok(existsSync(tarball));
    // docker save's manifest.json names every image.
    const manifest = JSON.parse(execFileSync('tar', ['-xOf', tarball, 'manifest.json'], { encoding: 'utf8' })) as Array<{ RepoTags: string[] }>;
    assert.deepEqual(manifest.flatMap((m) => m.RepoTags).sort(), [images.engine, ...Object.values(images.workers)].sort());
  });

  it('under another registry prefix the same images are tagged, not built again', async () => {
    // Before, each was built again: minutes for the same content.
    const r = await runSvc(['build', '--registry', other.slice(0, -1)], { cwd: proj, timeoutMs: BUILD_MS });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr.slice(-4000)}`);
    assert.match(r.stdout, /0 built, 3 tagged, 0 unchanged/);
    assert.doesNotMatch(r.stderr, /building image/);
    const tagged = JSON.parse(readFileSync(join(proj, '.svc/build/images.json'), 'utf8')) as typeof images;
    for (const [ref, was] of [[tagged.engine, images.engine], ...Object.keys(images.workers).map((n) => [tagged.workers[n]!, images.workers[n]!])] as Array<[string, string]>) {
      assert.equal(ref, was.replace(prefix, other));
      assert.match(r.stdout.split('\n').find((l) => l.includes(ref)) ?? '', /\btagged from \S+:[0-9a-f]{16}, not built$/, r.stdout);
      assert.equal((await docker.getImage(ref).inspect()).Id, (await docker.getImage(was).inspect()).Id);
    }
    // images.json names the last build's references: back to the first prefix for the tests below.
    const back = await runSvc(['build', '--registry', prefix.slice(0, -1)], { cwd: proj, timeoutMs: BUILD_MS });
    assert.match(back.stdout, /0 built, 0 tagged, 3 unchanged/);
  });

  it('the worker images hold no svc checkout and install the vendored SDK packages', async () => {
    const run = async (image: string, cmd: string): Promise<string> => {
      const out: Buffer[] = [];
      const stream = new Writable({ write: (b: Buffer, _enc, done) => (out.push(b), done()) });
      const [res] = (await docker.run(image, ['sh', '-c', cmd], stream, { HostConfig: { NetworkMode: 'none', AutoRemove: true }, Tty: true })) as [{ StatusCode: number }];
      const text = Buffer.concat(out).toString('utf8');
      assert.equal(res.StatusCode, 0, `${cmd}: ${text}`);
      return text;
    };
    const py = await run(images.workers['math-worker']!, 'test ! -e /opt/svc/sdk/python && grep vendor requirements.txt && ls vendor && pip show svc-sdk | head -2 && ! ls -a | grep -E "^(\\.venv|\\.svc)$"');
    assert.match(py, /^\.\/vendor\/svc_sdk-[^\s]+-py3-none-any\.whl/m);
    assert.match(py, /Name: svc-sdk/);
    const ts = await run(images.workers['caller-worker']!, 'test ! -e /opt/svc/sdk/typescript && node -p "require(\'./package.json\').dependencies[\'svc-sdk\']" && node -p "require(\'./node_modules/svc-sdk/package.json\').license"');
    assert.match(ts, /^file:vendor\/svc-sdk-[^\s]+\.tgz/m);
    assert.match(ts, /Apache-2\.0/);
  });

  it('the engine image and the worker images answer the quickstart calls', async () => {
    const enginePort = await closedPort();
    const httpPort = await closedPort();
    // The engine runs the built-in workers itself; the project's workers run as their own containers.
    writeFileSync(
      join(proj, 'engine.yaml'),
      `engine:\n  host: 127.0.0.1\n  port: ${enginePort}\nworkers:\n  - name: svc-state\n    builtin: svc-state\n  - name: svc-http\n    builtin: svc-http\n    config:\n      port: ${httpPort}\n`,
    );
    const start = async (image: string, opts: Docker.ContainerCreateOptions): Promise<void> => {
      const c = await docker.createContainer({ Image: image, ...opts, HostConfig: { NetworkMode: 'host', Init: true, ...opts.HostConfig } });
      containers.push(c);
      await c.start();
    };
    await start(images.engine, { Cmd: ['start', '--config', '/project/engine.yaml'], HostConfig: { Binds: [`${proj}:/project`] } });
    const url = `ws://127.0.0.1:${enginePort}`;
    for (const [name, ref] of Object.entries(images.workers)) await start(ref, { Env: [`SVC_URL=${url}`, `SVC_WORKER_NAME=${name}`] });

    caller = registerWorker(url, { workerName: 'e2e-build-caller', echoLogs: false, reconnect: { initialDelayMs: 100, maxDelayMs: 1000 } });
    const first = await until('math::add_two_numbers to answer', async () => {
      try {
        return (await caller!.trigger({ function_id: 'math::add_two_numbers', payload: { a: 1, b: 1 }, timeoutMs: 10_000 })) as { c: number; running_total: number };
      } catch {
        return undefined;
      }
    }, 120_000);
    assert.deepEqual(first, { c: 2, running_total: 2 });
    assert.deepEqual(await caller.trigger({ function_id: 'math::add', payload: { a: 2, b: 3 } }), { c: 5, running_total: 7 });
    const res = await until('POST /math/add-two-numbers', async () => {
      const r = await fetch(`http://127.0.0.1:${httpPort}/math/add-two-numbers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":2,"b":3}' }).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    }, 30_000);
    assert.deepEqual(await res.json(), { c: 5, running_total: 12 });
  });
});
