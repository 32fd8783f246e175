/**
 * `svc sdk update` through the real binary: it turns a project made by an older svc (its workers
 * name the SDKs by absolute paths into a checkout) into a portable one, replaces an older vendored
 * package, leaves an up-to-date project alone, and refuses a directory that is no worker.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { ROOT, runSvc, tempDir } from '../../e2e/helpers/cli.js';
import { ensureWorkerImage, ImageBuildError } from '../../src/supervisor/docker-image.js';
import { loadManifest } from '../../src/supervisor/manifest.js';

const TS_VERSION = (JSON.parse(readFileSync(join(ROOT, 'sdk/typescript/package.json'), 'utf8')) as { version: string }).version;
const PY_VERSION = /__version__ = "([^"]+)"/.exec(readFileSync(join(ROOT, 'sdk/python/src/svc_sdk/_version.py'), 'utf8'))![1]!;
const TGZ = `svc-sdk-${TS_VERSION}.tgz`;
const WHEEL = `svc_sdk-${PY_VERSION}-py3-none-any.whl`;

describe('svc sdk update', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  after(() => tmp.remove());
  const proj = join(tmp.dir, 'old');
  const math = join(proj, 'workers/math-worker');
  const caller = join(proj, 'workers/caller-worker');

  test('an older project (absolute SDK paths, an old vendored wheel): every worker gets its package and a relative reference', async () => {
    // What `svc create` wrote before projects were portable.
    mkdirSync(join(math, 'vendor'), { recursive: true });
    mkdirSync(join(caller, 'src'), { recursive: true });
    writeFileSync(join(math, 'math_worker.py'), 'import svc_sdk\n');
    writeFileSync(join(caller, 'src', 'worker.ts'), "import 'svc-sdk';\n");
    writeFileSync(join(proj, 'config.yaml'), 'engine:\n  port: 0\nworkers: []\n');
    writeFileSync(join(math, 'svc.worker.yaml'), 'name: math-worker\nruntime:\n  kind: python\n  package_manager: pip\n  entry: math_worker.py\n');
    writeFileSync(join(math, 'requirements.txt'), `# the SDK\nsvc-sdk @ file://${ROOT}sdk/python\nhttpx>=0.27\n`);
    writeFileSync(join(math, 'vendor', 'svc_sdk-0.0.1-py3-none-any.whl'), 'old');
    writeFileSync(join(caller, 'svc.worker.yaml'), 'name: caller-worker\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: src/worker.ts\n');
    const pkgText = `{\n    "name": "caller-worker",\n    "dependencies": { "svc-sdk": "file:${ROOT}sdk/typescript", "ws": "^8" }\n}\n`;
    writeFileSync(join(caller, 'package.json'), pkgText);

    const r = await runSvc(['sdk', 'update'], { cwd: proj, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`workers/math-worker: vendor/${WHEEL} \\(removed svc_sdk-0\\.0\\.1-py3-none-any\\.whl\\)`));
    assert.ok(r.stdout.includes(`requirements.txt: svc-sdk @ file://${ROOT}sdk/python → ./vendor/${WHEEL}`), r.stdout);
    assert.ok(r.stdout.includes(`package.json: file:${ROOT}sdk/typescript → file:vendor/${TGZ}`), r.stdout);

    assert.deepEqual(readdirSync(join(math, 'vendor')), [WHEEL]);
    assert.deepEqual(readdirSync(join(caller, 'vendor')), [TGZ]);
    // Only the SDK's line changes; the rest of each file stays as the user wrote it.
    assert.equal(readFileSync(join(math, 'requirements.txt'), 'utf8'), `# the SDK\n./vendor/${WHEEL}\nhttpx>=0.27\n`);
    assert.equal(readFileSync(join(caller, 'package.json'), 'utf8'), pkgText.replace(`file:${ROOT}sdk/typescript`, `file:vendor/${TGZ}`));
    for (const f of ['requirements.txt', 'vendor']) assert.ok(existsSync(join(math, f)));
  });

  test('an older worker is refused by the image build before Docker is asked, naming svc sdk update', async () => {
    const old = join(tmp.dir, 'older-worker');
    mkdirSync(old);
    writeFileSync(join(old, 'svc.worker.yaml'), 'name: older\nruntime:\n  kind: python\n  package_manager: pip\n  entry: main.py\n');
    writeFileSync(join(old, 'main.py'), 'import svc_sdk\n');
    writeFileSync(join(old, 'requirements.txt'), `svc-sdk @ file://${ROOT}sdk/python\n`);
    // No Docker engine answers at this socket: the refusal comes before any call to it.
    const docker = new Docker({ socketPath: join(tmp.dir, 'no-docker.sock') });
    await assert.rejects(ensureWorkerImage(docker, loadManifest(old)), (e: unknown) => e instanceof ImageBuildError && e.code === 'image_build_failed' && /older cannot be built into an image: its requirements\.txt names the svc SDK by an absolute path.*run `svc sdk update`/.test(e.message));
    // Vendored, the same worker passes that check and goes on to Docker (which is not there).
    assert.equal((await runSvc(['sdk', 'update', old], { timeoutMs: 60_000 })).code, 0);
    await assert.rejects(ensureWorkerImage(docker, loadManifest(old)), (e: unknown) => !/absolute path/.test(String((e as Error).message)));
  });

  test('a second run changes nothing and says so', async () => {
    const before = readFileSync(join(math, 'requirements.txt'), 'utf8');
    const r = await runSvc(['sdk', 'update'], { cwd: proj, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`workers/caller-worker: up to date \\(vendor/${TGZ.replace(/\./g, '\\.')}\\)`));
    assert.match(r.stdout, /workers\/math-worker: up to date/);
    assert.equal(readFileSync(join(math, 'requirements.txt'), 'utf8'), before);
  });

  test('a package replaced under the same version, with the worker installed: says a restart installs it (test/supervisor/install.test.ts)', async () => {
    // A changed SDK of the same version (a developer's checkout): pip and npm keep what they installed.
    writeFileSync(join(math, 'vendor', WHEEL), 'an older build of the same version');
    mkdirSync(join(math, '.venv'), { recursive: true });
    const r = await runSvc(['sdk', 'update', './workers/math-worker'], { cwd: proj, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /workers\/math-worker\/\.venv holds the SDK installed before \(same version\): svc worker restart <name> installs this one/);
  });

  test("package-lock.json's integrity of the vendored tarball follows a new build of the same version", async () => {
    // Left as it was, `npm install` with that lock (an image build: svc build, the docker runtime)
    // failed with EINTEGRITY once svc sdk update had put a newer build of the same version there.
    writeFileSync(join(caller, 'vendor', TGZ), 'an older build of the same version');
    const stale = `sha512-${createHash('sha512').update('an older build of the same version').digest('base64')}`;
    const lock = (integrity: string): string =>
      `{\n  "name": "caller-worker",\n  "lockfileVersion": 3,\n  "packages": {\n    "": { "dependencies": { "svc-sdk": "file:vendor/${TGZ}" } },\n    "node_modules/svc-sdk": {\n      "version": "${TS_VERSION}",\n      "resolved": "file:vendor/${TGZ}",\n      "integrity": "${integrity}"\n    },\n    "node_modules/ws": { "version": "8.0.0", "integrity": "sha512-other" }\n  }\n}\n`;
    writeFileSync(join(caller, 'package-lock.json'), lock(stale));
    const r = await runSvc(['sdk', 'update', './workers/caller-worker'], { cwd: proj, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const fresh = `sha512-${createHash('sha512').update(readFileSync(join(caller, 'vendor', TGZ))).digest('base64')}`;
    assert.notEqual(fresh, stale);
    assert.equal(readFileSync(join(caller, 'package-lock.json'), 'utf8'), lock(fresh));
    assert.ok(r.stdout.includes(`package-lock.json: the integrity of vendor/${TGZ} is now the new file's`), r.stdout);
  });

  test('extras are kept: ./vendor/svc_sdk-….whl[otel] and svc-sdk[otel] are the SDK, not a line to add another beside', async () => {
    // docs/observability.md: a worker exporting its own spans installs the SDK with its `otel` extra.
    for (const line of [`./vendor/svc_sdk-0.0.1-py3-none-any.whl[otel]`, `svc-sdk[otel] @ file://${ROOT}sdk/python`]) {
      writeFileSync(join(math, 'requirements.txt'), `${line}\nhttpx>=0.27\n`);
      const r = await runSvc(['sdk', 'update', './workers/math-worker'], { cwd: proj, timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(readFileSync(join(math, 'requirements.txt'), 'utf8'), `./vendor/${WHEEL}[otel]\nhttpx>=0.27\n`, line);
    }
  });

  test('a requirements.txt without the SDK gets it appended; a directory without a manifest is refused (exit 2)', async () => {
    writeFileSync(join(math, 'requirements.txt'), 'httpx>=0.27');
    const r = await runSvc(['sdk', 'update', './workers/math-worker'], { cwd: proj, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(join(math, 'requirements.txt'), 'utf8'), `httpx>=0.27\n./vendor/${WHEEL}\n`);
    mkdirSync(join(proj, 'notes'));
    const bad = await runSvc(['sdk', 'update', './notes'], { cwd: proj });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /invalid_manifest: .*notes\/svc\.worker\.yaml: not found/);
  });
});
