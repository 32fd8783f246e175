/**
 * `svc create` and `svc project init` through the real binary, and the quickstart they scaffold run
 * for real: its manifests' install and start commands, a real engine, the real svc-state and
 * svc-http workers, with the state and HTTP blocks switched on and off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { parse } from 'yaml';
import { InvocationError, Worker } from 'svc-sdk';
import { EngineProcess, ROOT, runSvc, tempDir, until } from '../../e2e/helpers/cli.js';
import { loadManifest } from '../../src/supervisor/manifest.js';
import { parseConfig } from '../../src/daemon/config-file.js';

const ROOT_DIR = ROOT.replace(/\/$/, '');

const TS_VERSION = (JSON.parse(readFileSync(join(ROOT, 'sdk/typescript/package.json'), 'utf8')) as { version: string }).version;
const PY_VERSION = /__version__ = "([^"]+)"/.exec(readFileSync(join(ROOT, 'sdk/python/src/svc_sdk/_version.py'), 'utf8'))![1]!;
const TGZ = `svc-sdk-${TS_VERSION}.tgz`;
const WHEEL = `svc_sdk-${PY_VERSION}-py3-none-any.whl`;

const EXPECTED_FILES = [
  '.gitignore',
  'README.md',
  'config.yaml',
  'workers/caller-worker/package.json',
  'workers/caller-worker/src/worker.ts',
  'workers/caller-worker/svc.worker.yaml',
  'workers/caller-worker/tsconfig.json',
  `workers/caller-worker/vendor/${TGZ}`,
  'workers/math-worker/math_worker.py',
  'workers/math-worker/requirements.txt',
  'workers/math-worker/svc.worker.yaml',
  `workers/math-worker/vendor/${WHEEL}`,
];

/** Every file under `dir`, relative and '/'-separated, sorted. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)).split(sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

describe('svc create / svc project init', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  after(() => tmp.remove());

  test('both commands scaffold the same quickstart tree, byte for byte, and print the files and next commands', async () => {
    mkdirSync(join(tmp.dir, 'a'));
    mkdirSync(join(tmp.dir, 'b'));
    const created = await runSvc(['create', '--template', 'quickstart', '--directory', 'proj'], { cwd: join(tmp.dir, 'a') });
    assert.equal(created.code, 0, created.stderr);
    const inited = await runSvc(['project', 'init', 'proj', '--template', 'quickstart'], { cwd: join(tmp.dir, 'b') });
    assert.equal(inited.code, 0, inited.stderr);

    const a = join(tmp.dir, 'a', 'proj');
    const b = join(tmp.dir, 'b', 'proj');
    assert.deepEqual(tree(a), EXPECTED_FILES);
    assert.deepEqual(tree(b), EXPECTED_FILES);
    for (const f of EXPECTED_FILES) assert.ok(readFileSync(join(a, f)).equals(readFileSync(join(b, f))), `${f} differs between create and project init`);

    for (const out of [created.stdout, inited.stdout]) {
      assert.match(out, /Created the quickstart project in .*proj/);
      for (const f of EXPECTED_FILES) assert.ok(out.includes(`  ${f}\n`), `${f} is not listed in:\n${out}`);
      assert.ok(out.includes('cd proj'), out);
      for (const step of ['svc --config config.yaml', 'svc worker add svc-state', 'svc worker add svc-http', 'svc worker add ./workers/math-worker', 'svc worker add ./workers/caller-worker', 'svc trigger math::add a=2 b=3']) {
        assert.ok(out.includes(step), `next step "${step}" missing from:\n${out}`);
      }
      assert.ok(out.includes(`installs the svc SDK from its vendor/ directory (${TGZ}, ${WHEEL})`), out);
    }
  });

  test('--template defaults to quickstart; the workers name their vendored SDK packages by relative paths, and nothing names this checkout', async () => {
    const r = await runSvc(['create', '--directory', 'dflt'], { cwd: tmp.dir });
    assert.equal(r.code, 0, r.stderr);
    const dir = join(tmp.dir, 'dflt');
    assert.deepEqual(tree(dir), EXPECTED_FILES);
    for (const f of EXPECTED_FILES.filter((f) => !f.includes('/vendor/'))) {
      const text = readFileSync(join(dir, f), 'utf8');
      assert.doesNotMatch(text, /\{\{(project_name|svc_[a-z_]+)\}\}/, `${f} has an unfilled placeholder`);
      assert.ok(!text.includes(ROOT_DIR), `${f} names the svc checkout ${ROOT_DIR}:\n${text}`);
      assert.doesNotMatch(text, /file:\/\//, `${f} has a file:// URL`);
    }

    const pkg = JSON.parse(readFileSync(join(dir, 'workers/caller-worker/package.json'), 'utf8')) as {
      name: string;
      type: string;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    assert.equal(pkg.name, 'caller-worker');
    assert.equal(pkg.type, 'module');
    assert.equal(pkg.scripts.start, 'tsx src/worker.ts');
    assert.ok(pkg.devDependencies.tsx, 'tsx is a devDependency');
    assert.equal(pkg.dependencies['svc-sdk'], `file:vendor/${TGZ}`);
    // npm pack's tarball of the SDK, with its metadata, README and LICENSE.
    const listing = spawnSync('tar', ['-xzOf', join(dir, 'workers/caller-worker/vendor', TGZ), 'package/package.json'], { encoding: 'utf8' });
    const meta = JSON.parse(listing.stdout) as { name: string; version: string; license: string; description: string };
    assert.deepEqual([meta.name, meta.version, meta.license], ['svc-sdk', TS_VERSION, 'Apache-2.0']);
    const files = spawnSync('tar', ['-tzf', join(dir, 'workers/caller-worker/vendor', TGZ)], { encoding: 'utf8' }).stdout.split('\n');
    for (const f of ['package/README.md', 'package/LICENSE', 'package/dist/index.js']) assert.ok(files.includes(f), `${f} missing from ${TGZ}`);

    const req = readFileSync(join(dir, 'workers/math-worker/requirements.txt'), 'utf8');
    assert.match(req, new RegExp(`^\\./vendor/${WHEEL.replace(/\./g, '\\.')}$`, 'm'));
    // pip wheel's wheel of the SDK: the METADATA a registry would show, and the license file.
    const unzip = spawnSync('python3', ['-c', 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print("\\n".join(z.namelist())); print(z.read(f"svc_sdk-{sys.argv[2]}.dist-info/METADATA").decode())', join(dir, 'workers/math-worker/vendor', WHEEL), PY_VERSION], { encoding: 'utf8' });
    assert.equal(unzip.status, 0, unzip.stderr);
    for (const line of ['Name: svc-sdk', `Version: ${PY_VERSION}`, 'License-Expression: Apache-2.0', 'svc_sdk/__init__.py', `svc_sdk-${PY_VERSION}.dist-info/licenses/LICENSE`]) assert.ok(unzip.stdout.includes(line), `${line} missing from the wheel:\n${unzip.stdout}`);

    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    assert.match(readme, /^# dflt$/m, 'the README is titled with the project name');
    assert.ok(readme.includes('svc sdk update'), 'the README says how the vendored SDKs are refreshed');
    for (const step of ['svc worker add svc-state', 'svc worker add svc-http', 'svc worker add ./workers/math-worker', 'svc worker add ./workers/caller-worker', 'svc trigger math::add a=2 b=3', `svc trigger --function-id=math::add_two_numbers --payload='{"a":1,"b":1}'`, 'curl', 'svc worker list', 'svc worker logs math-worker', 'USE_STATE', 'USE_HTTP']) {
      assert.ok(readme.includes(step), `README lacks "${step}"`);
    }
  });

  test('the manifests and config.yaml are valid YAML that the supervisor accepts', () => {
    const dir = join(tmp.dir, 'dflt');
    const math = loadManifest(join(dir, 'workers/math-worker'));
    assert.deepEqual(
      { name: math.name, runtime: math.runtime, scripts: math.scripts },
      {
        name: 'math-worker',
        runtime: { kind: 'python', package_manager: 'pip', entry: 'math_worker.py' },
        scripts: { install: 'pip install -r requirements.txt', start: 'python math_worker.py' },
      },
    );
    const caller = loadManifest(join(dir, 'workers/caller-worker'));
    assert.deepEqual(
      { name: caller.name, runtime: caller.runtime, scripts: caller.scripts },
      {
        name: 'caller-worker',
        runtime: { kind: 'typescript', package_manager: 'npm', entry: 'src/worker.ts' },
        scripts: { install: 'npm install', start: 'node --import tsx src/worker.ts' },
      },
    );
    const text = readFileSync(join(dir, 'config.yaml'), 'utf8');
    const raw = parse(text) as { engine: Record<string, unknown>; workers: unknown };
    assert.deepEqual(raw.workers, []);
    const cfg = parseConfig('config.yaml', text);
    assert.equal(cfg.engine.host, '127.0.0.1');
    assert.equal(cfg.engine.port, 49134);
    assert.match(text, /svc worker add/, 'config.yaml says where workers get added');
  });

  test('an unknown template is refused with the known ones listed, exit 2, nothing written', async () => {
    const r = await runSvc(['create', '--template', 'nope', '--directory', 'never'], { cwd: tmp.dir });
    assert.equal(r.code, 2);
    // One line, as every other command's errors: `error: <code>: <message>` (before: oclif's wrapped
    // " ›   Error: …" with the code on a line of its own).
    assert.match(r.stderr, /^error: unknown_template: unknown template "nope"; known templates: .*quickstart\n$/);
    assert.equal(existsSync(join(tmp.dir, 'never')), false);
    const p = await runSvc(['project', 'init', 'never', '--template', 'nope'], { cwd: tmp.dir });
    assert.equal(p.code, 2);
    assert.match(p.stderr, /^error: unknown_template: .*known templates: .*quickstart\n$/);
    assert.equal(existsSync(join(tmp.dir, 'never')), false);
  });

  test('a non-empty directory is refused naming --force (exit 2, untouched); --force writes into it', async () => {
    const dir = join(tmp.dir, 'busy');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.txt'), 'mine\n');
    writeFileSync(join(dir, 'config.yaml'), 'old: true\n');
    for (const args of [['create', '--directory', 'busy'], ['project', 'init', 'busy']]) {
      const r = await runSvc(args, { cwd: tmp.dir });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, /^error: directory_not_empty: \S*busy is not empty .*--force.*\n$/);
      assert.deepEqual(readdirSync(dir).sort(), ['config.yaml', 'notes.txt']);
    }
    const f = await runSvc(['project', 'init', 'busy', '--force'], { cwd: tmp.dir });
    assert.equal(f.code, 0, f.stderr);
    assert.match(f.stdout, /config\.yaml {2}\(replaced\)/);
    assert.equal(readFileSync(join(dir, 'notes.txt'), 'utf8'), 'mine\n', 'files the template lacks are kept');
    assert.match(readFileSync(join(dir, 'config.yaml'), 'utf8'), /^engine:/m, 'config.yaml is the template\'s');
    assert.deepEqual(tree(dir), [...EXPECTED_FILES, 'notes.txt'].sort());
    // An empty existing directory needs no --force.
    mkdirSync(join(tmp.dir, 'empty'));
    assert.equal((await runSvc(['create', '-d', 'empty'], { cwd: tmp.dir })).code, 0);
  });

  test('without --directory, svc create makes ./<template>', async () => {
    const cwd = join(tmp.dir, 'nodir');
    mkdirSync(cwd);
    const r = await runSvc(['create'], { cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readdirSync(cwd), ['quickstart']);
    assert.deepEqual(tree(join(cwd, 'quickstart')), EXPECTED_FILES);
    assert.ok(r.stdout.includes('cd quickstart'), r.stdout);
  });

  test('svc create <directory>: the directory as an argument, as a new user types it', async () => {
    const r = await runSvc(['create', 'my-project'], { cwd: tmp.dir });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(tree(join(tmp.dir, 'my-project')), EXPECTED_FILES);
    assert.ok(r.stdout.includes('cd my-project'), r.stdout);
    const both = await runSvc(['create', 'one', '--directory', 'two'], { cwd: tmp.dir });
    assert.equal(both.code, 2);
    assert.equal(both.stderr, 'error: invalid_argument: svc create: two directories given: one and --directory two; give one; svc create --help shows its usage\n');
  });

  test('a target that is a file, or a missing project name, is a usage error (exit 2)', async () => {
    writeFileSync(join(tmp.dir, 'afile'), 'x');
    const r = await runSvc(['create', '--directory', 'afile'], { cwd: tmp.dir });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: not_a_directory: \S*afile exists and is not a directory\n$/);
    const n = await runSvc(['project', 'init'], { cwd: tmp.dir });
    assert.equal(n.code, 2);
    assert.match(n.stderr, /^error: invalid_argument: svc project init: missing argument NAME, Name of the project directory to create; /);
    // Before: "error: the project name must not be empty", without the code.
    const blank = await runSvc(['project', 'init', ' '], { cwd: tmp.dir });
    assert.deepEqual([blank.code, blank.stderr], [2, 'error: invalid_argument: svc project init: the project name must not be empty; svc project init --help shows its usage\n']);
  });
});

// ---- the scaffolded quickstart, running ------------------------------------------------------------

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) killGroup(c, 'SIGKILL');
});

function killGroup(c: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-c.pid!, signal); // the process group we created: sh, npx, tsx and node alike
  } catch {
    /* already gone */
  }
}

interface Proc {
  child: ChildProcess;
  out(): string;
  stop(): Promise<void>;
}

/** Run a shell command in its own process group (as the supervisor runs a manifest's `start`). */
function startProc(command: string, cwd: string, env: Record<string, string>): Proc {
  const child = spawn('sh', ['-c', command], { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<void>((r) => child.on('close', () => r()));
  return {
    child,
    out: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) killGroup(child, 'SIGTERM');
      const t = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
      children.delete(child);
    },
  };
}

/** A manifest's `install`, run with the worker's .venv/bin first on PATH as the supervisor does. */
function install(dir: string, env: Record<string, string>): void {
  const cmd = loadManifest(dir).scripts.install;
  const r = spawnSync('sh', ['-c', cmd], { cwd: dir, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${cmd} in ${dir} failed:\n${r.stdout}\n${r.stderr}`);
}

describe('the quickstart workers, installed and run from their manifests', { timeout: 600_000 }, () => {
  const tmp = tempDir();
  const proj = join(tmp.dir, 'qs');
  const mathDir = join(proj, 'workers/math-worker');
  const callerDir = join(proj, 'workers/caller-worker');
  let pyEnv: Record<string, string>;
  let engine: EngineProcess;
  let state: Proc;
  let http: Proc;
  let base: string;
  let client: Worker;
  const running: Proc[] = [];

  const call = <T>(function_id: string, payload: unknown): Promise<T> => client.trigger<T>({ function_id, payload });
  const total = (): Promise<unknown> => call('state::get', { scope: 'math', key: 'running_total' });
  const functionIds = async (): Promise<string[]> =>
    (await call<{ functions: Array<{ function_id: string; workers: unknown[] }> }>('engine::functions::list', {})).functions
      .filter((f) => f.workers.length > 0)
      .map((f) => f.function_id);
  const post = (body: string): Promise<Response> =>
    fetch(`${base}/math/add-two-numbers`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });

  /** Start a worker from its manifest's `start`, and wait until its functions are registered. */
  async function startWorker(dir: string, env: Record<string, string>, fns: string[]): Promise<Proc> {
    const p = startProc(loadManifest(dir).scripts.start, dir, { SVC_URL: engine.url, ...(dir === mathDir ? pyEnv : {}), ...env });
    running.push(p);
    try {
      await until(`${fns.join(', ')} registered`, async () => {
        const ids = await functionIds();
        return fns.every((f) => ids.includes(f));
      }, 30_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nworker output:\n${p.out()}`);
    }
    return p;
  }

  async function stopWorkers(): Promise<void> {
    await Promise.all(running.splice(0).map((p) => p.stop()));
    await until('the workers gone', async () => {
      const ids = await functionIds();
      return !ids.some((f) => f.startsWith('math::') || f.startsWith('http::'));
    });
  }

  /** Edit the one marked switch line of a worker; returns a function putting it back. */
  function editSwitch(file: string, from: string, to: string): () => void {
    const original = readFileSync(file, 'utf8');
    assert.equal(original.split(from).length, 2, `${file} has exactly one "${from}"`);
    writeFileSync(file, original.replace(from, to));
    return () => writeFileSync(file, original);
  }

  before(async () => {
    const r = await runSvc(['create', '--directory', proj]);
    assert.equal(r.code, 0, r.stderr);
    const venv = spawnSync('python3', ['-m', 'venv', join(mathDir, '.venv')], { encoding: 'utf8' });
    assert.equal(venv.status, 0, `python3 -m venv failed: ${venv.stderr}`);
    pyEnv = { PATH: `${join(mathDir, '.venv', 'bin')}:${process.env.PATH ?? ''}`, VIRTUAL_ENV: join(mathDir, '.venv') };
    install(mathDir, pyEnv);
    install(callerDir, {});

    engine = await EngineProcess.start(['--config', 'config.yaml', '--port', '0'], { cwd: proj });
    state = startProc(`exec "${process.execPath}" "${join(ROOT, 'dist/src/workers/state/main.js')}"`, proj, {
      SVC_URL: engine.url,
      SVC_WORKER_CONFIG: JSON.stringify({ data_dir: join(tmp.dir, 'state') }),
    });
    http = startProc(`exec "${process.execPath}" "${join(ROOT, 'dist/src/workers/http/main.js')}"`, proj, {
      SVC_URL: engine.url,
      SVC_WORKER_CONFIG: JSON.stringify({ port: 0, request_log: false }),
    });
    const port = await until('svc-http listening', () => /svc-http listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(http.out())?.[1], 15_000);
    base = `http://127.0.0.1:${port}`;
    client = new Worker(engine.url, { workerName: 'quickstart-test', role: 'client', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
    client.start();
    await client.ready(10_000);
    await until('state::update registered', async () => (await functionIds()).includes('state::update'), 15_000);
  });

  after(async () => {
    await Promise.all(running.map((p) => p.stop()));
    await client?.shutdown();
    await Promise.all([state?.stop(), http?.stop()]);
    await engine?.stop('SIGTERM');
    tmp.remove();
  });

  test('both blocks on: the README\'s calls answer as documented, and the running total adds up', async (t) => {
    t.after(stopWorkers);
    await startWorker(mathDir, {}, ['math::add']);
    await startWorker(callerDir, {}, ['math::add_two_numbers', 'http::add_two_numbers']);

    const first = await runSvc(['trigger', 'math::add', 'a=2', 'b=3', '--address', engine.url]);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), { c: 5, running_total: 5 });
    const second = await runSvc(['trigger', '--function-id=math::add_two_numbers', '--payload={"a":1,"b":1}', '--address', engine.url]);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), { c: 2, running_total: 7 });

    const res = await until('the route bound', async () => {
      const r = await post('{"a":2,"b":3}');
      return r.status === 404 ? undefined : r;
    }, 10_000);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), { c: 5, running_total: 12 });

    // a and b default to 0; bad input is the caller's error, over every path.
    assert.deepEqual(await call('math::add', {}), { c: 0, running_total: 12 });
    assert.deepEqual(await call('math::add', { a: 4 }), { c: 4, running_total: 16 });
    await assert.rejects(call('math::add', { a: 'x', b: 1 }), (e: InvocationError) => e.code === 'invalid_payload' && /a must be a number/.test(e.message));
    await assert.rejects(call('math::add_two_numbers', { a: 1, b: true }), (e: InvocationError) => e.code === 'invalid_payload');
    const bad = await post('{"a":"x"}');
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'invalid_payload');
    assert.equal((await post('[1,2]')).status, 400);
    assert.equal(await total(), 16, 'failed calls add nothing');

    // Exact under concurrency: every path at once, one atomic increment per call.
    const before = (await total()) as number;
    let sum = 0;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 120; i++) {
      const a = i % 7;
      const b = (i * 3) % 5;
      sum += a + b;
      const body = JSON.stringify({ a, b });
      if (i % 3 === 0) calls.push(call('math::add', { a, b }));
      else if (i % 3 === 1) calls.push(call('math::add_two_numbers', { a, b }));
      else calls.push(post(body).then((r) => assert.equal(r.status, 200)));
    }
    await Promise.all(calls);
    assert.equal(await total(), before + sum);

    // math::add logs an info line with a and b, stored by the engine under math-worker.
    const logs = await call<{ logs: Array<{ level: string; worker_name?: string; message: string; data?: unknown }> }>('engine::logs::list', {});
    const line = logs.logs.find((l) => l.worker_name === 'math-worker' && l.level === 'info' && /a=2 and b=3/.test(l.message));
    assert.ok(line, 'no info line from math-worker with a=2 and b=3');
    assert.deepEqual(line.data, { a: 2, b: 3 });
  });

  test('state block off (USE_STATE = False): math::add returns {c} only and leaves the total alone', async () => {
    const before = await total();
    const restore = editSwitch(join(mathDir, 'math_worker.py'), 'USE_STATE = True', 'USE_STATE = False');
    try {
      await startWorker(mathDir, {}, ['math::add']);
      await startWorker(callerDir, {}, ['math::add_two_numbers', 'http::add_two_numbers']);
      assert.deepEqual(await call('math::add', { a: 2, b: 3 }), { c: 5 });
      assert.deepEqual(await call('math::add_two_numbers', { a: 1, b: 1 }), { c: 2 });
      const res = await until('the route bound', async () => {
        const r = await post('{"a":2,"b":3}');
        return r.status === 404 ? undefined : r;
      }, 10_000);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { c: 5 }, 'no running_total key when math-worker keeps none');
      assert.equal(await total(), before);
    } finally {
      restore();
      await stopWorkers();
    }
  });

  test('HTTP block off (USE_HTTP = false): math::add_two_numbers only, no route', async () => {
    const restore = editSwitch(join(callerDir, 'src/worker.ts'), 'const USE_HTTP = true;', 'const USE_HTTP = false;');
    try {
      await startWorker(mathDir, {}, ['math::add']);
      await startWorker(callerDir, {}, ['math::add_two_numbers']);
      const before = (await total()) as number;
      assert.deepEqual(await call('math::add_two_numbers', { a: 1, b: 1 }), { c: 2, running_total: before + 2 });
      assert.equal((await functionIds()).includes('http::add_two_numbers'), false);
      assert.equal((await post('{"a":2,"b":3}')).status, 404);
    } finally {
      restore();
      await stopWorkers();
    }
  });

  test('SVC_QUICKSTART_STATE=0 and SVC_QUICKSTART_HTTP=0 switch the blocks off without editing', async (t) => {
    t.after(stopWorkers);
    const before = await total();
    await startWorker(mathDir, { SVC_QUICKSTART_STATE: '0' }, ['math::add']);
    await startWorker(callerDir, { SVC_QUICKSTART_HTTP: '0' }, ['math::add_two_numbers']);
    assert.deepEqual(await call('math::add_two_numbers', { a: 5, b: 6 }), { c: 11 });
    assert.equal((await functionIds()).includes('http::add_two_numbers'), false);
    assert.equal((await post('{"a":2,"b":3}')).status, 404);
    assert.equal(await total(), before);
    await stopWorkers();
    // A value that is not a switch stops the worker with a message naming the variable.
    const p = startProc(loadManifest(mathDir).scripts.start, mathDir, { SVC_URL: engine.url, ...pyEnv, SVC_QUICKSTART_STATE: 'maybe' });
    await until('math-worker exits', () => p.child.exitCode !== null, 15_000);
    assert.notEqual(p.child.exitCode, 0);
    assert.match(p.out(), /SVC_QUICKSTART_STATE must be 0 or 1/);
    await p.stop();
    assert.ok(statSync(join(mathDir, '.venv')).isDirectory());
  });
});
