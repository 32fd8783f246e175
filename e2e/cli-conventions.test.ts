/**
 * CLI conventions (issue 25, item 7), through the real binary: every command has a summary and
 * examples; `svc help <command>` works; an unknown command names the closest one; `svc status` and
 * `svc stop`; `svc trigger --json` and `--token`; `svc logs -w <unknown>` says no such worker.
 * Before: `svc wrker` printed "command wrker not found", `svc help worker add` "command
 * help:worker:add not found", there was no status or stop, and `svc logs -w nobody` printed nothing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EngineProcess, ROOT, runSvc, tempDir } from './helpers/cli.js';

const TOKEN = 'conventions-admin-token-0123456789';

function commandFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? commandFiles(p) : f.endsWith('.js') ? [p] : [];
  });
}

describe('CLI conventions', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  const svc = (args: string[], env: Record<string, string> = {}) => runSvc(args, { cwd: tmp.dir, env });

  before(async () => {
    writeFileSync(
      join(tmp.dir, 'config.yaml'),
      `engine:\n  host: 127.0.0.1\n  port: 0\n  auth:\n    tokens:\n      - name: admin\n        token: ${TOKEN}\n        admin: true\nworkers: []\n`,
    );
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await engine?.stop();
    tmp.remove();
  });

  test('every command has a summary and examples', async () => {
    const files = commandFiles(join(ROOT, 'dist', 'src', 'cli', 'commands'));
    assert.ok(files.length > 20);
    for (const f of files) {
      const cmd = (await import(pathToFileURL(f).href)) as { default: { summary?: string; examples?: string[] } };
      assert.ok(cmd.default.summary, `${f}: no summary`);
      assert.ok((cmd.default.examples ?? []).length > 0, `${f}: no examples`);
    }
  });

  // Before: the descriptions, written with breaks at about 100 columns, were wrapped again at 80,
  // which left every other line a few words long ("package.json with svc-sdk and tsx," / "tsconfig.json) …").
  test('--help reflows a description: within a paragraph only its last line is short', async () => {
    for (const command of [['worker', 'new'], ['worker', 'add'], ['console'], ['build'], ['sdk', 'update'], ['cron', 'run'], ['logs'], ['stop']]) {
      const help = await svc([...command, '--help']);
      assert.equal(help.code, 0, help.stderr);
      const description = /\nDESCRIPTION\n([\s\S]*?)\n\n[A-Z]+\n/.exec(help.stdout)![1]!;
      for (const paragraph of description.split('\n\n')) {
        const lines = paragraph.split('\n');
        for (const line of lines.slice(0, -1)) assert.ok(line.length >= 45, `svc ${command.join(' ')} --help: a short line within a paragraph: ${JSON.stringify(line)}\n${paragraph}`);
      }
    }
    // Where a break means something it stays: the examples after "Two forms:".
    assert.match((await svc(['trigger', '--help'])).stdout, /Two forms:\n {2}svc trigger --function-id=math::add --payload='\{"a":2,"b":3\}'\n {2}svc trigger math::add a=2 b=3\n/);
  });

  test('svc help worker add; an unknown command names the closest', async () => {
    const help = await svc(['help', 'worker', 'add']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /Add a worker to config\.yaml/);
    assert.match(help.stdout, /svc worker add svc-state/);
    const typo = await svc(['wrker', 'list']);
    assert.equal(typo.code, 2);
    assert.equal(typo.stderr, 'error: invalid_argument: unknown command "wrker list" (did you mean "worker list"?); svc --help lists the commands\n');
    const topic = await svc(['qeue']);
    assert.match(topic.stderr, /did you mean "queue"\?/);
    // Cut short: the command it begins, not the nearest spelling ("start").
    assert.match((await svc(['stat'])).stderr, /did you mean "status"\?/);
    // Before: `svc triger math::add` was unknown command "triger math  add" (the '::' of the
    // argument read as topic separators), and `svc worker ad svc-state` suggested "worker".
    for (const [args, asked, near] of [
      [['triger', 'math::add', 'a=1'], 'triger', 'trigger'],
      [['worker', 'ad', 'svc-state'], 'worker ad', 'worker add'],
      [['queue', 'dql', 'default'], 'queue dql', 'queue dlq'],
      [['cron', 'rn', 'reports::daily'], 'cron rn', 'cron run'],
    ] as const) {
      const r = await svc([...args]);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stderr, `error: invalid_argument: unknown command "${asked}" (did you mean "${near}"?); svc --help lists the commands\n`, args.join(' '));
    }
  });

  // Before: oclif's " ›   Error: Nonexistent flag: --bogus" block, wrapped at 80 columns, no code,
  // then the command's whole usage; `svc worker list extra` was an "unknown command" (did you mean "worker"?).
  test('a command line the parser refuses: one line, error: invalid_argument: <command>: <what>, exit 2', async () => {
    for (const [args, what] of [
      [['trigger', 'math::add', '--bogus', '1'], 'svc trigger: unknown flag --bogus'],
      [['trigger', 'math::add', '--timeout-ms', 'abc'], 'svc trigger: --timeout-ms: Expected an integer but received: abc'],
      [['worker', 'add'], 'svc worker add: missing argument TARGET, Worker directory, or svc-state / svc-http / svc-queue / svc-cron'],
      [['worker', 'add', '--set', 'port=1', 'svc-http'], 'svc worker add: missing argument TARGET, Worker directory, or svc-state / svc-http / svc-queue / svc-cron (--set takes every word after it: put the arguments first)'],
      [['worker', 'add', 'svc-state', '--runtime', 'k8s'], 'svc worker add: Expected --runtime=k8s to be one of: process, docker'],
      [['worker', 'new', 'x'], 'svc worker new: Missing required flag language'],
      [['queue', 'dlq', 'default', 'extra'], 'svc queue dlq: unexpected argument "extra"'],
      [['worker', 'list', 'extra'], 'svc worker list: unexpected argument "extra"'],
      [['status', 'a', 'b'], 'svc status: unexpected arguments "a", "b"'],
      [['-c'], 'svc start: Flag --config expects a value'],
      [['status', '--\u001b[2J'], 'svc status: unknown flag --\\u001b[2J'],
      // What the commands themselves refuse before doing anything (before: no code, no command).
      [['worker', 'add', 'svc-queue', '--set', 'foo'], 'svc worker add: --set: argument "foo" is not key=value (e.g. a=2)'],
      [['trigger', 'math::add', '--payload', '[1]'], 'svc trigger: --payload must be a JSON object like \'{"a":1}\', got an array'],
    ] as const) {
      const r = await svc([...args]);
      const command = what.slice(0, what.indexOf(':'));
      assert.equal(r.stderr, `error: invalid_argument: ${what}; ${command} --help shows its usage\n`, args.join(' '));
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  });

  test('svc trigger --token and --json', async () => {
    // From another directory: the local engine's own token is not at hand.
    const away = { SVC_URL: engine.url };
    const refused = await runSvc(['trigger', 'engine::health::check', '--json'], { env: away });
    assert.equal(refused.code, 1);
    assert.equal((JSON.parse(refused.stdout) as { error: { code: string } }).error.code, 'unauthorized');
    const ok = await runSvc(['trigger', 'engine::health::check', '--token', TOKEN], { env: away });
    assert.equal(ok.code, 0, ok.stderr);
  });

  test('svc logs -w <unknown> says no such worker', async () => {
    const r = await svc(['logs', '-w', 'nobody']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: worker_not_found: no worker "nobody" is connected and no line names it/);
  });

  // Before: with the engine stopped, KIND showed the built-in's name (svc-state) where a running
  // engine's list says `builtin`, so the column changed meaning with the engine's state.
  // Before: "error: svc-queue is not running (…)" without a code, unlike svc cron's function_not_found.
  test('svc queue without svc-queue: function_not_found, and how to start it', async () => {
    const r = await svc(['queue', 'list']);
    assert.deepEqual([r.code, r.stderr], [1, 'error: function_not_found: Function queue::list not found (is svc-queue running? svc worker add svc-queue)\n']);
  });

  // Before: "error: cannot serve the console on …: the port is already in use (use --port)", no code.
  test('svc console on a taken port: listen_failed, and how to choose another', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const busy = (blocker.address() as AddressInfo).port;
    try {
      const r = await svc(['console', '--port', String(busy)]);
      assert.deepEqual(
        [r.code, r.stderr],
        [1, `error: listen_failed: cannot serve the console on 127.0.0.1:${busy}: the port is already in use; choose another: svc console --port <n> (0: any free port)\n`],
      );
    } finally {
      blocker.close();
    }
  });

  // Before: "error: Docker is not reachable at …", without the code docs/errors.md gives it.
  test('svc build without a Docker engine: docker_unavailable, exit 1', async () => {
    const r = await svc(['build'], { DOCKER_HOST: 'unix:///nonexistent/docker.sock' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: docker_unavailable: Docker is not reachable at \/nonexistent\/docker\.sock: .*svc build needs a Docker engine/);
  });

  test('svc worker list without a running engine: KIND is builtin or directory, as with one', async () => {
    const stopped = tempDir();
    try {
      writeFileSync(join(stopped.dir, 'config.yaml'), 'engine:\n  port: 0\nworkers:\n  - name: svc-state\n    builtin: svc-state\n');
      const json = await runSvc(['worker', 'list', '--json'], { cwd: stopped.dir });
      assert.equal(json.code, 0, json.stderr);
      const rows = JSON.parse(json.stdout) as Array<{ name: string; kind: string; status: string }>;
      assert.deepEqual(rows.map((r) => [r.name, r.kind, r.status]), [['svc-state', 'builtin', 'stopped (engine not running)']]);
      const text = await runSvc(['worker', 'list'], { cwd: stopped.dir });
      assert.match(text.stdout, /^svc-state\s+builtin\s+process\s+-\s+stopped \(engine not running\)/m);
    } finally {
      stopped.remove();
    }
  });

  test('svc status, then svc stop', async () => {
    const status = await svc(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^engine    ${engine.url.replace(/[.]/g, '\\.')} \\(pid \\d+, up \\d+s\\)\\nworkers   0 supervised, 0 connected\\nfunctions 0\\n$`));
    const json = JSON.parse((await svc(['status', '--json'])).stdout) as { running: boolean; pid: number };
    assert.equal(json.running, true);
    assert.equal(json.pid, engine.child.pid);
    const stop = await svc(['stop']);
    assert.equal(stop.code, 0, stop.stderr);
    assert.match(stop.stdout, /✓ stopped the engine of config\.yaml/);
    assert.equal((await engine.exited).code, 0);
    const after = await svc(['status']);
    assert.equal(after.code, 3);
    assert.match(after.stdout, /No engine is running for config\.yaml/);
    // With the code every CLI error carries (before: "error: no engine is running …", none).
    const again = await svc(['stop']);
    assert.deepEqual([again.code, again.stderr], [1, 'error: engine_not_running: no engine is running for config.yaml\n']);
    const restart = await svc(['worker', 'restart', 'math-worker']);
    assert.deepEqual([restart.code, restart.stderr], [1, 'error: engine_not_running: no engine is running for config.yaml (start it: svc --config config.yaml)\n']);
  });

  // Before: "No engine is running for config.yaml (start it: svc --config config.yaml, …)" outside
  // any project, which started an empty project wherever the user stood.
  test('svc status, stop and worker restart outside a project say there is no config.yaml', async () => {
    const elsewhere = tempDir();
    try {
      const line = `there is no config.yaml in ${elsewhere.dir}: run this in your project's directory (the one holding config.yaml), or pass --config <path>`;
      const status = await runSvc(['status'], { cwd: elsewhere.dir });
      assert.deepEqual([status.code, status.stdout], [3, `T${line.slice(1)}\n`]);
      for (const args of [['stop'], ['worker', 'restart', 'math-worker']]) {
        const r = await runSvc(args, { cwd: elsewhere.dir });
        assert.deepEqual([r.code, r.stderr], [1, `error: invalid_config: ${line}\n`], args.join(' '));
      }
    } finally {
      elsewhere.remove();
    }
  });
});
