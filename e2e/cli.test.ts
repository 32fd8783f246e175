/**
 * The `svc` CLI end to end, through the real binary only: the engine command and its config.yaml,
 * and `svc trigger` against a real engine with real svc-sdk workers. Every engine here listens on
 * 127.0.0.1 and a free port, never the default 49134.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, closedPort, runSvc, tempDir, until } from './helpers/cli.js';

const PORT0 = 'engine:\n  host: 127.0.0.1\n  port: 0\n';

/**
 * oclif's `this.error` prints " ›   Error: …" and wraps the message at 80 columns, continuing with
 * " ›   " even when stderr is not a terminal; join it back into one line before matching.
 */
const oneLine = (stderr: string): string => stderr.replace(/[ \t]*\n[ \t]*›[ \t]+/g, ' ');

describe('svc --config: the engine command', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  const engines: EngineProcess[] = [];
  after(async () => {
    await Promise.all(engines.map((e) => e.stop('SIGKILL')));
    tmp.remove();
  });

  test('creates a missing config.yaml with defaults, says so, prints the ready line, exits 0 on SIGTERM', async () => {
    const cfg = join(tmp.dir, 'config.yaml');
    assert.equal(existsSync(cfg), false);
    // --port 0 keeps the test off the default port the new file names.
    const e = await EngineProcess.start(['--config', 'config.yaml', '--port', '0'], { cwd: tmp.dir });
    engines.push(e);
    assert.match(e.stdout, /Created config\.yaml with default settings/);
    assert.match(e.stdout, /svc engine ready on ws:\/\/127\.0\.0\.1:\d+/);
    assert.notEqual(e.port, 49134);
    assert.ok(e.stdout.indexOf('Created') < e.stdout.indexOf('ready'), 'the creation notice comes before the ready line');
    const written = parse(readFileSync(cfg, 'utf8')) as { engine: Record<string, unknown>; workers: unknown[] };
    assert.equal(written.engine.host, '127.0.0.1');
    assert.equal(written.engine.port, 49134);
    assert.deepEqual(written.workers, []);
    const r = await e.stop('SIGTERM');
    assert.equal(r.code, 0, `stderr: ${e.stderr}`);
    assert.match(e.stdout, /engine stopped/);
  });

  test('`svc -c <file>` starts from that file and does not announce creating it', async () => {
    writeFileSync(join(tmp.dir, 'other.yaml'), PORT0);
    const e = await EngineProcess.start(['-c', 'other.yaml'], { cwd: tmp.dir });
    engines.push(e);
    assert.doesNotMatch(e.stdout, /Created/);
    assert.ok(e.port > 0 && e.port !== 49134);
    // It really serves: a call through the CLI reaches its builtins.
    const r = await runSvc(['trigger', 'engine::health::check', '--address', e.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { status: string }).status, 'ok');
    assert.equal((await e.stop('SIGINT')).code, 0);
  });

  test('invalid YAML: clear error naming the file and the line, non-zero exit, file untouched', async () => {
    const bad = 'engine:\n  host: 127.0.0.1\n  port: [0, 1\n';
    writeFileSync(join(tmp.dir, 'bad.yaml'), bad);
    const r = await runSvc(['-c', 'bad.yaml'], { cwd: tmp.dir });
    assert.notEqual(r.code, 0);
    assert.match(oneLine(r.stderr), /bad\.yaml/);
    assert.match(oneLine(r.stderr), /invalid YAML at line \d+/);
    assert.doesNotMatch(r.stdout, /ready/);
    assert.equal(readFileSync(join(tmp.dir, 'bad.yaml'), 'utf8'), bad);
  });

  test('unknown key under engine: error names the file and the key, non-zero exit', async () => {
    writeFileSync(join(tmp.dir, 'typo.yaml'), 'engine:\n  host: 127.0.0.1\n  prot: 0\n');
    const r = await runSvc(['-c', 'typo.yaml'], { cwd: tmp.dir });
    assert.notEqual(r.code, 0);
    assert.match(oneLine(r.stderr), /typo\.yaml/);
    assert.match(oneLine(r.stderr), /engine\.prot: unknown key/);
    assert.match(oneLine(r.stderr), /port/, 'lists the known keys');
  });

  test('invalid value: error names the key and the bad value', async () => {
    writeFileSync(join(tmp.dir, 'value.yaml'), 'engine:\n  host: 127.0.0.1\n  port: "eighty"\n');
    const r = await runSvc(['-c', 'value.yaml'], { cwd: tmp.dir });
    assert.notEqual(r.code, 0);
    assert.match(oneLine(r.stderr), /value\.yaml/);
    assert.match(oneLine(r.stderr), /engine\.port: must be an integer port/);
    assert.match(oneLine(r.stderr), /eighty/);
  });

  // config.yaml's top level holds `engine:` and `workers:`; a misspelt section (here `enigne:`) is
  // today silently ignored, so the user's settings are dropped without a word. Reported to the lead
  // (src/daemon/config-file.ts parseConfig). The valid `engine:` block keeps a wrongly accepted
  // start on port 0; it is killed below.
  test('unknown top-level key: error names the file and the key', async () => {
    writeFileSync(join(tmp.dir, 'top.yaml'), `${PORT0}enigne:\n  port: 1234\n`);
    const e = await EngineProcess.start(['-c', 'top.yaml'], { cwd: tmp.dir, timeoutMs: 5000 }).then(
      (started) => {
        engines.push(started);
        return started;
      },
      (err: Error) => err,
    );
    assert.ok(e instanceof Error, 'the engine must refuse to start');
    assert.match(e.message, /top\.yaml/);
    assert.match(e.message, /enigne/);
  });

  describe('port already in use', () => {
    let blocker: Server;
    let busy: number;
    before(async () => {
      blocker = createServer();
      await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
      busy = (blocker.address() as AddressInfo).port;
    });
    after(() => new Promise<void>((r) => blocker.close(() => r())));

    test('engine.port in config.yaml: clear error naming the port, exit non-zero', async () => {
      writeFileSync(join(tmp.dir, 'busy.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${busy}\n`);
      const r = await runSvc(['-c', 'busy.yaml'], { cwd: tmp.dir });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`^error: listen_failed: .*port ${busy} is already in use`));
      // And how to pick another, naming the file given.
      assert.match(r.stderr, /; choose another port: engine\.port in busy\.yaml, or svc --config busy\.yaml --port 0 for any free one\n$/);
      assert.doesNotMatch(r.stdout, /ready/);
    });

    test('--port flag: the error names the port actually tried', async () => {
      writeFileSync(join(tmp.dir, 'flag.yaml'), PORT0);
      const r = await runSvc(['start', '-c', 'flag.yaml', '--port', String(busy)], { cwd: tmp.dir });
      assert.notEqual(r.code, 0);
      assert.match(oneLine(r.stderr), new RegExp(`127\\.0\\.0\\.1:${busy}`));
      assert.match(oneLine(r.stderr), new RegExp(`port ${busy} is already in use`));
    });
  });
});

describe('svc trigger', { timeout: 90_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;
  const started: string[] = [];

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), PORT0);
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    worker = registerWorker(engine.url, { workerName: 'cli-e2e', echoLogs: false });
    worker.registerFunction('test::echo', (data: unknown) => data);
    worker.registerFunction('test::slow', async (data: { ms: number; tag?: string }) => {
      started.push(data.tag ?? '');
      await new Promise((r) => setTimeout(r, data.ms));
      return { slept: data.ms };
    });
    await worker.ready(5000);
    await until('test::echo to be callable', async () => (await runSvc(['trigger', 'test::echo', '--address', engine.url])).code === 0, 10_000);
  });

  after(async () => {
    await worker?.shutdown();
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test('an unknown function: "Function math::nope not found" on stderr, non-zero exit, nothing on stdout', async () => {
    const r = await runSvc(['trigger', 'math::nope', '--address', engine.url]);
    assert.notEqual(r.code, 0);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /Function math::nope not found/);
    assert.match(r.stderr, /^error: function_not_found: /m);
    // Nothing registered is close to math::nope: no suggestion.
    assert.doesNotMatch(r.stderr, /did you mean/);
  });

  // Before: only "Function test::ecoh not found", though test::echo is registered.
  test('a mistyped function id: the closest registered one is suggested', async () => {
    const r = await runSvc(['trigger', 'test::ecoh', '--address', engine.url]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'error: function_not_found: Function test::ecoh not found\ndid you mean "test::echo"? (svc worker list shows each worker\'s functions)\n');
  });

  // Before: `did you mean "engine::functions::list"?`, a near name of the function called, though
  // the id not found was the payload's.
  test('function_not_found of another id than the one called: no suggestion', async () => {
    const r = await runSvc(['trigger', 'engine::functions::info', 'function_id=test::nope', '--address', engine.url]);
    assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', 'error: function_not_found: Function test::nope not found\n']);
  });

  // Before: only "Function math::add not found", from another project's engine listening on the
  // port this project's config.yaml names, while this project's engine was not running.
  test("function_not_found from an engine that is not the project's: a note says which engine answered", async () => {
    const other = tempDir();
    try {
      writeFileSync(join(other.dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${engine.port}\n`);
      const r = await runSvc(['trigger', 'math::add'], { cwd: other.dir });
      assert.deepEqual(
        [r.code, r.stderr],
        [
          1,
          'error: function_not_found: Function math::add not found\n' +
            `note: no engine of config.yaml is running, so the engine that answered is the one at ws://127.0.0.1:${engine.port} (config.yaml's engine.host:port), another project's? Start this project's: svc --config config.yaml\n`,
        ],
      );
    } finally {
      other.remove();
    }
    // In the project whose engine it is: no note.
    const own = await runSvc(['trigger', 'math::add'], { cwd: tmp.dir });
    assert.deepEqual([own.code, own.stderr], [1, 'error: function_not_found: Function math::add not found\n']);
  });

  test('key=value values are typed as JSON when they parse, else taken as strings', async () => {
    const r = await runSvc([
      'trigger',
      'test::echo',
      'a=1',
      'b=true',
      'c=null',
      'd={"x":1}',
      'e=hello',
      'f="2"',
      'g=1.5',
      'h=[1,"x"]',
      'i=',
      'j=a=b',
      '--address',
      engine.url,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { a: 1, b: true, c: null, d: { x: 1 }, e: 'hello', f: '2', g: 1.5, h: [1, 'x'], i: '', j: 'a=b' });
  });

  test('--payload merges with key=value pairs, the pairs win; --function-id form works', async () => {
    const r = await runSvc(['trigger', '--function-id=test::echo', '--payload={"a":0,"z":{"k":[1]}}', 'a=5', '--address', engine.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { a: 5, z: { k: [1] } });
  });

  // Before: "Cannot reach the engine at 127.0.0.1:<port>: nothing listens there", of a running engine.
  test('--address and SVC_URL without ws:// mean ws://', async () => {
    const bare = engine.url.replace(/^ws:\/\//, '');
    const r = await runSvc(['trigger', 'test::echo', 'via=bare', '--address', bare]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { via: 'bare' });
    const env = await runSvc(['trigger', 'test::echo', 'via=env'], { env: { SVC_URL: bare } });
    assert.equal(env.code, 0, env.stderr);
  });

  test('SVC_URL is used when --address is absent', async () => {
    const r = await runSvc(['trigger', 'test::echo', 'via=env'], { env: { SVC_URL: engine.url } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { via: 'env' });
  });

  test('--payload that is not a JSON object: clear error, exit 2', async () => {
    for (const bad of ['[1,2]', '42', 'null', '"text"']) {
      const r = await runSvc(['trigger', 'test::echo', `--payload=${bad}`, '--address', engine.url]);
      assert.equal(r.code, 2, `--payload=${bad}: ${r.stderr}`);
      assert.match(r.stderr, /^error: invalid_argument: svc trigger: --payload must be a JSON object like '\{"a":1\}', got .+; svc trigger --help shows its usage\n$/);
      assert.equal(r.stdout, '');
    }
    const r = await runSvc(['trigger', 'test::echo', '--payload={oops', '--address', engine.url]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: invalid_argument: svc trigger: --payload is not valid JSON: .+; svc trigger --help shows its usage\n$/);
  });

  test('bad arguments: a pair without "=", or no function id, exit 2 with a clear error', async () => {
    const noEq = await runSvc(['trigger', 'test::echo', 'oops', '--address', engine.url]);
    assert.equal(noEq.code, 2);
    // In the form of every other parse error (before: no code, no command).
    assert.equal(noEq.stderr, 'error: invalid_argument: svc trigger: argument "oops" is not key=value (e.g. a=2); svc trigger --help shows its usage\n');
    const noId = await runSvc(['trigger', '--address', engine.url]);
    assert.equal(noId.code, 2);
    assert.equal(noId.stderr, 'error: invalid_argument: svc trigger: a function id is required: svc trigger <function_id> [key=value ...] or --function-id=<id>; svc trigger --help shows its usage\n');
  });

  test('no engine at the address: "Cannot reach the engine", exit 1, promptly', async () => {
    const port = await closedPort();
    const r = await runSvc(['trigger', 'test::echo', '--address', `ws://127.0.0.1:${port}`], { timeoutMs: 20_000 });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`Cannot reach the engine at ws://127\\.0\\.0\\.1:${port}`));
    assert.ok(r.ms < 10_000, `took ${r.ms} ms`);
  });

  test('--timeout-ms on a slow function: error code timeout, before the function would finish', async () => {
    const r = await runSvc(['trigger', 'test::slow', 'ms=4000', 'tag=timeout', '--timeout-ms', '300', '--address', engine.url]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^error: timeout: .*test::slow.*300 ?ms/m);
    assert.ok(r.ms < 3500, `took ${r.ms} ms`);
  });

  test('--timeout-ms that is not a positive integer is refused as a bad argument', async () => {
    const r = await runSvc(['trigger', 'test::echo', '--timeout-ms', '0', '--address', engine.url]);
    assert.notEqual(r.code, 0);
    assert.match(oneLine(r.stderr), /timeout-ms/);
  });

  test('`svc trigger --help` documents the key=value typing', async () => {
    const r = await runSvc(['trigger', '--help']);
    assert.equal(r.code, 0, r.stderr);
    const text = r.stdout.replace(/\s+/g, ' ');
    assert.match(text, /svc trigger math::add a=2 b=3/);
    assert.match(text, /typed as JSON when it parses as JSON/);
    assert.match(text, /a=2 is the number 2/);
    assert.match(text, /ok=true a boolean/);
    assert.match(text, /name=alice the string "alice"/);
    assert.match(text, /--payload/);
    assert.match(text, /--timeout-ms/);
    assert.match(text, /SVC_URL/);
  });
});

describe("svc trigger without --timeout-ms: the engine's default deadline", { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;
  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), `${PORT0}  invocation_timeout_ms: 500\n`);
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    worker = registerWorker(engine.url, { workerName: 'cli-default-deadline', echoLogs: false });
    worker.registerFunction('test::slow', () => new Promise((r) => setTimeout(() => r('late'), 8000)));
    await worker.ready(5000);
  });
  after(async () => {
    await worker?.shutdown(0);
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test('a slow function ends with `timeout` at engine.invocation_timeout_ms (500 ms), not after 30 s', async () => {
    const r = await runSvc(['trigger', 'test::slow', '--address', engine.url], { timeoutMs: 10_000 });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^error: timeout: Invocation of test::slow timed out after 500ms/m);
  });
});

describe('engine shutdown while a call is in flight', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let worker: Worker | undefined;
  let engine: EngineProcess | undefined;
  after(async () => {
    await worker?.shutdown();
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test('SIGTERM: the call completes (drain), then the engine exits 0', async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), `${PORT0}  shutdown_grace_ms: 10000\n`);
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    let running = false;
    worker = registerWorker(engine.url, { workerName: 'drain-e2e', echoLogs: false });
    worker.registerFunction('drain::slow', async () => {
      running = true;
      await new Promise((r) => setTimeout(r, 1500));
      return { finished: true };
    });
    await worker.ready(5000);
    const url = engine.url;
    await until('drain::slow to be registered', async () => {
      const r = await runSvc(['trigger', 'engine::functions::info', 'function_id=drain::slow', '--address', url]);
      return r.code === 0;
    });

    const call = runSvc(['trigger', 'drain::slow', '--address', url], { timeoutMs: 20_000 });
    await until('the call to be in flight', () => running, 10_000);
    const t0 = Date.now();
    const exit = engine.stop('SIGTERM');
    const r = await call;
    assert.equal(r.code, 0, `the in-flight call must complete; stderr: ${r.stderr}`);
    assert.deepEqual(JSON.parse(r.stdout), { finished: true });
    const e = await exit;
    assert.equal(e.code, 0, `engine stderr: ${engine.stderr}`);
    assert.equal(e.signal, null);
    assert.match(engine.stdout, /SIGTERM: shutting down, letting 1 call\(s\) in flight finish/);
    assert.match(engine.stdout, /engine stopped/);
    assert.ok(Date.now() - t0 < 8000, 'the engine exits soon after the drain, not at the end of the grace period');
  });
});
