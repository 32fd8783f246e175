/**
 * Worker output you can attribute (issue 25, item 9, first half): every line a supervised worker
 * writes to stdout or stderr is kept in its log file with the time it was read and the replica that
 * wrote it, so `svc worker logs` of a worker with two replicas tells them apart. Before, the output
 * went to the file as written: no time, no replica.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EngineProcess, ROOT, runSvc, tempDir, until } from './helpers/cli.js';

const SDK = pathToFileURL(join(ROOT, 'sdk', 'typescript', 'dist', 'index.js')).href;
const STAMPED = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z) \[(\d+)\] (.*)$/;

describe('svc worker logs: each line with its time and replica', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 60_000 });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    const dir = join(tmp.dir, 'chatty');
    mkdirSync(dir);
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: chatty\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: node w.mjs\n');
    writeFileSync(
      join(dir, 'w.mjs'),
      `import { registerWorker } from ${JSON.stringify(SDK)};
console.log('started pid ' + process.pid);
console.error('a warning from pid ' + process.pid);
// Escape codes a terminal would act on (clear the screen, go back to the line's start).
console.log('clear\\x1b[2Jthe screen\\rand fake a line');
// A line written in two pieces is still one line.
process.stdout.write('half a line, ');
setTimeout(() => process.stdout.write('then the rest\\n'), 50);
const w = registerWorker(process.env.SVC_URL, { echoLogs: false });
w.registerFunction('chatty::noop', () => ({}));
`,
    );
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await engine?.stop();
    tmp.remove();
  });

  test('two replicas: every line stamped, each replica\'s lines tagged with its index', async () => {
    const add = await svc(['worker', 'add', './chatty', '--replicas', '2']);
    assert.equal(add.code, 0, `${add.stdout}\n${add.stderr}`);
    const output = await until(
      'both replicas to finish their lines',
      async () => {
        const r = await svc(['worker', 'logs', 'chatty']);
        return (r.stdout.match(/then the rest/g) ?? []).length === 2 ? r.stdout : null;
      },
      20_000,
    );
    // Before: the log began with the blank line that separates one start from the run before.
    assert.match(output, /^=== \S+ starting chatty/);
    const lines = output.split('\n').filter((l) => l !== '' && !l.startsWith('=== '));
    const stamped = lines.map((l) => STAMPED.exec(l));
    assert.ok(stamped.every((m) => m !== null), output);
    const byReplica = new Map<string, string[]>();
    for (const m of stamped) {
      assert.ok(Math.abs(Date.parse(m![1]!) - Date.now()) < 120_000, m![1]);
      byReplica.set(m![2]!, [...(byReplica.get(m![2]!) ?? []), m![3]!]);
    }
    assert.deepEqual([...byReplica.keys()].sort(), ['0', '1'], output);
    for (const [replica, own] of byReplica) {
      const pid = /^started pid (\d+)$/.exec(own.find((l) => l.startsWith('started pid'))!)![1];
      assert.ok(own.includes(`a warning from pid ${pid}`), `replica ${replica}'s stderr line: ${output}`);
      assert.ok(own.includes('half a line, then the rest'), `replica ${replica}'s line in two writes: ${output}`);
    }
    assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(output), `control characters printed raw: ${JSON.stringify(output)}`);
    assert.match(output, /clear\\u001b\[2Jthe screen\\rand fake a line/);
    const pids = (await svc(['worker', 'list', '--json'])).stdout;
    for (const own of byReplica.values()) assert.match(pids, new RegExp(own.find((l) => l.startsWith('started pid'))!.slice('started pid '.length)));
    // worker add names every replica's pid (before: only the first one's).
    const started = [...byReplica.values()].map((own) => own.find((l) => l.startsWith('started pid'))!.slice('started pid '.length)).sort();
    const printed = /\(pids (\d+), (\d+)\)/.exec(add.stdout);
    assert.ok(printed, `worker add names both pids: ${add.stdout}`);
    assert.deepEqual([printed[1], printed[2]].sort(), started);
    const restarted = await svc(['worker', 'restart', 'chatty']);
    assert.equal(restarted.code, 0, `${restarted.stdout}\n${restarted.stderr}`);
    assert.match(restarted.stdout, /✓ restarted chatty \(pids \d+, \d+\)/);
  });
});
