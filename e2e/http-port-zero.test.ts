/**
 * svc-http on `port: 0` (tests, several projects on one machine) binds a port it picks: the user
 * learns which from `svc worker add`, `svc worker restart`, `svc status` and `svc worker list
 * --json`. Before, only its log said it (`svc-http listening on …`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineProcess, runSvc, tempDir } from './helpers/cli.js';

describe('svc-http with port: 0', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 60_000 });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await engine?.stop();
    tmp.remove();
  });

  test('the URL with the port it bound is printed, and it is where svc-http answers', async () => {
    const add = await svc(['worker', 'add', 'svc-http', '--set', 'port=0']);
    assert.equal(add.code, 0, add.stderr);
    const url = /\bserving (http:\/\/127\.0\.0\.1:(\d+)), supervised/.exec(add.stdout)?.[1];
    assert.ok(url, add.stdout);
    assert.notEqual(url, 'http://127.0.0.1:0');
    // svc-http itself answers there: a route nobody bound is its JSON 404.
    const res = await fetch(`${url}/nothing-bound-here`);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'not_found');

    const status = await svc(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^http +${url} \\(svc-http\\)$`, 'm'));
    const list = await svc(['worker', 'list', '--json']);
    assert.deepEqual((JSON.parse(list.stdout) as Array<{ name: string; urls: string[] }>).find((r) => r.name === 'svc-http')?.urls, [url]);

    // A restart binds another port: the one printed is the new one.
    const restart = await svc(['worker', 'restart', 'svc-http']);
    assert.equal(restart.code, 0, restart.stderr);
    const again = /, connected, serving (http:\/\/127\.0\.0\.1:\d+)$/m.exec(restart.stdout)?.[1];
    assert.ok(again, restart.stdout);
    assert.equal((await fetch(`${again}/nothing-bound-here`)).status, 404);
  });
});
