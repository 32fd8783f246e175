/**
 * Writing a worker from scratch (issue 25, item 10): `svc worker new <dir> --language python|typescript`
 * scaffolds a worker (manifest, dependencies with tsx for TypeScript, one function) that
 * `svc worker add` installs and starts first time, and whose function answers. Before, there was no
 * such command: a user copied the quickstart's workers and edited them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineProcess, runSvc, tempDir } from './helpers/cli.js';

describe('svc worker new', { timeout: 300_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 240_000 });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await engine?.stop();
    tmp.remove();
  });

  for (const [language, dir] of [
    ['python', 'greeter'],
    ['typescript', 'greeter-ts'],
  ] as const) {
    test(`${language}: new, add, call`, async () => {
      const made = await svc(['worker', 'new', `./workers/${dir}`, '--language', language]);
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stdout, new RegExp(`✓ created the ${language} worker ${dir} in \\./workers/${dir}:[\\s\\S]*svc worker add \\./workers/${dir}`));
      // The Python one with --json (issue 25 item 7): one JSON object on stdout, numbers as numbers.
      const json = language === 'python';
      const add = await svc(['worker', 'add', `./workers/${dir}`, ...(json ? ['--json'] : [])]);
      assert.equal(add.code, 0, `${add.stdout}\n${add.stderr}`);
      assert.match(json ? add.stderr : add.stdout, /auto-started \(pid \d+\) and connected/);
      if (json) {
        const d = JSON.parse(add.stdout) as { name: string; change: string; started: boolean; ready: boolean; pid: number; pids: number[] };
        assert.equal(d.name, dir);
        assert.equal(d.change, 'added');
        assert.equal(d.ready, true);
        assert.equal(typeof d.pid, 'number');
        assert.deepEqual(d.pids, [d.pid]);
      }
      const call = await svc(['trigger', `${dir}::hello`, 'name=svc']);
      assert.equal(call.code, 0, call.stderr);
      assert.deepEqual(JSON.parse(call.stdout), { message: 'hello, svc' });
      const bad = await svc(['trigger', `${dir}::hello`, 'name=3']);
      assert.match(bad.stderr, /^error: invalid_payload: /);
      // Stopped by the engine (SIGTERM), it closes its connection: it leaves, it is not lost.
      // Before, the TypeScript one had no handler: "left: worker connection lost (code 1006)".
      assert.equal((await svc(['worker', 'restart', dir])).code, 0);
      const logs = await svc(['logs', '--lines', '500']);
      assert.match(logs.stdout, new RegExp(`worker ${dir} left: worker disconnected`));
      assert.doesNotMatch(logs.stdout, new RegExp(`worker ${dir} left: worker connection lost`));
    });
  }

  test('a non-empty directory or an invalid name: exit 2, nothing written', async () => {
    mkdirSync(join(tmp.dir, 'full'));
    writeFileSync(join(tmp.dir, 'full', 'keep.txt'), 'x');
    const full = await svc(['worker', 'new', './full', '--language', 'python']);
    assert.equal(full.code, 2);
    assert.match(full.stderr, /^error: directory_not_empty: \S*full is not empty/);
    const bad = await svc(['worker', 'new', './Bad_Name', '--language', 'python']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^error: invalid_worker_name: "Bad_Name" is not a worker name.*pass --name\n$/);
  });
});
