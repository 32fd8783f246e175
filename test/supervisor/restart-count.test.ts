/**
 * RESTARTS (`svc worker list`, engine::supervisor::list's `restarts`) counts only the restarts the
 * supervisor made after a worker exited unexpectedly, as `kubectl get pods` does. Before, a manual
 * `svc worker restart` and every restart of `svc dev` on a saved file counted as well: a worker
 * edited twenty times showed 20 restarts without ever crashing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevWatch } from '../../src/daemon/dev-watch.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { parseWorkerEntries } from '../../src/supervisor/worker-entries.js';
import { eventually } from '../helpers/util.js';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-restart-count-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

test('a manual restart and svc dev restarts are not counted; a restart after a crash is, and stays counted', async () => {
  const dir = join(root, 'steady');
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  writeFileSync(join(dir, 'svc.worker.yaml'), 'name: steady\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: node w.mjs\n');
  writeFileSync(join(dir, 'w.mjs'), 'setInterval(() => {}, 1000);');
  const cfg = join(root, 'steady.yaml');
  writeFileSync(cfg, 'workers: []\n');
  const logs: string[] = [];
  const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 20, stopGraceMs: 2000, log: (_l, m) => logs.push(m) });
  const [entry] = parseWorkerEntries(cfg, [{ name: 'steady', path: dir }]);
  const dev = startDevWatch({ configFile: cfg, supervisor: s, initial: [entry!], log: (_l, m) => logs.push(m) });
  const running = async (not: unknown): Promise<number> => {
    let pid = 0;
    await eventually(() => {
      const d = s.get('steady')!;
      assert.equal(d.status, 'running');
      assert.ok(typeof d.pid === 'number' && d.pid !== not);
      pid = d.pid;
    }, 10_000);
    return pid;
  };
  try {
    const first = s.describe(await s.start(entry!)).pid;
    // `svc worker restart steady` (engine::supervisor's restart calls this).
    await s.restart(entry!);
    const second = await running(first);
    assert.equal(s.get('steady')!.restarts, 0, 'a manual restart is not a restart after a crash');

    // `svc dev`: a saved source restarts it.
    writeFileSync(join(dir, 'w.mjs'), 'setInterval(() => {}, 2000);');
    await eventually(() => assert.ok(logs.includes('dev: w.mjs changed; restarting steady'), logs.join('\n')), 5000);
    const third = await running(second);
    assert.equal(s.get('steady')!.restarts, 0, 'a restart of svc dev is not a restart after a crash');

    // An unexpected exit: restarted by the supervisor, and counted.
    process.kill(third, 'SIGKILL');
    const fourth = await running(third);
    assert.equal(s.get('steady')!.restarts, 1);
    assert.ok(logs.some((l) => /^steady exited \(signal SIGKILL\); restarting in \d+ ms \(restart #1\)$/.test(l)), logs.join('\n'));

    // A manual restart afterwards keeps that count, and adds nothing.
    await s.restart(entry!);
    await running(fourth);
    assert.equal(s.get('steady')!.restarts, 1);
  } finally {
    dev.close();
    await s.stopAll();
  }
});
