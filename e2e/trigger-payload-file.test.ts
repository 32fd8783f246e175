/**
 * `svc trigger --payload @<file>` and `--payload -` (stdin). Before, a payload could only be a
 * command-line argument, which Linux caps at 128 KiB: a 200 KiB JSON document could not be sent at
 * all (the shell's "Argument list too long"), and `--payload @orders.json` was "not valid JSON".
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, runSvc, tempDir } from './helpers/cli.js';

describe('svc trigger --payload @file and -', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;
  const trigger = (args: string[], stdin?: string) => runSvc(['trigger', ...args], { cwd: tmp.dir, env: { SVC_URL: engine.url }, ...(stdin !== undefined ? { stdin } : {}) });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir, timeoutMs: 30_000 });
    worker = registerWorker(engine.url, { workerName: 'orders', echoLogs: false });
    worker.registerFunction('orders::import', (d: { items: string[]; tag?: string }) => ({ items: d.items.length, bytes: d.items.join('').length, tag: d.tag ?? null }));
    await worker.ready(10_000);
  });
  after(async () => {
    await worker?.shutdown();
    await engine?.stop('SIGTERM', 20_000);
    tmp.remove();
  });

  test('reads a payload larger than a command line from a file, or from stdin; key=value pairs still merge', async () => {
    const big = JSON.stringify({ items: Array.from({ length: 200 }, () => 'x'.repeat(1000)) });
    writeFileSync(join(tmp.dir, 'orders.json'), big);
    const fromFile = await trigger(['orders::import', '--payload', '@orders.json', 'tag=file']);
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.equal(fromFile.stdout, '{"items":200,"bytes":200000,"tag":"file"}\n');
    const fromStdin = await trigger(['orders::import', '--payload', '-'], big);
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    assert.equal(fromStdin.stdout, '{"items":200,"bytes":200000,"tag":null}\n');
  });

  test('a file that cannot be read, or that holds no JSON object, is a usage error naming it', async () => {
    const missing = await trigger(['orders::import', '--payload', '@nope.json']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^error: invalid_argument: svc trigger: --payload @nope\.json: cannot read "nope\.json": ENOENT/);
    writeFileSync(join(tmp.dir, 'list.json'), '[1]');
    const list = await trigger(['orders::import', '--payload', '@list.json']);
    assert.equal(list.code, 2);
    assert.match(list.stderr, /--payload must be a JSON object like '\{"a":1\}', got an array/);
  });

  test('a file over max_frame_bytes, or nested deeper than the engine accepts, is refused naming why; the worker serves on', async () => {
    writeFileSync(join(tmp.dir, 'huge.json'), JSON.stringify({ items: ['x'.repeat(17 * 1024 * 1024)] }));
    const huge = await trigger(['orders::import', '--payload', '@huge.json']);
    assert.equal(huge.code, 1, huge.stdout);
    assert.match(huge.stderr, /^error: payload_too_large: Call of orders::import: frame of \d+ bytes exceeds the limit of 16777216 bytes \((the engine's max_frame_bytes, announced at connect|registerWorker option maxFrameBytes)\)$/m);
    writeFileSync(join(tmp.dir, 'deep.json'), `{"items":${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
    const deep = await trigger(['orders::import', '--payload', '@deep.json']);
    assert.equal(deep.code, 1, deep.stdout);
    assert.match(deep.stderr, /^error: invalid_payload: .*nested too deeply to encode \(the engine accepts 128 levels/);
    const after = await trigger(['orders::import', 'items=["a"]']);
    assert.equal(after.stdout, '{"items":1,"bytes":1,"tag":null}\n', after.stderr);
  });
});
