/**
 * The crash-loop limit (crashLoopExits exits within crashWindowMs) counts per replica. Before, the
 * exits of all replicas of a worker counted together: with `replicas: 2` a worker was declared
 * crash-looping after half the restarts a single replica gets (a syntax error: in ~1.7 s).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseWorkerEntries } from '../../src/supervisor/worker-entries.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { eventually } from '../helpers/util.js';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-crash-replicas-'));
});
after(() => {
  rmSync(root, { recursive: true, force: true });
});

test('a worker with 2 replicas is a crash loop after the limit of exits per replica, not in all', async () => {
  const dir = join(root, 'crashy2');
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  writeFileSync(join(dir, 'svc.worker.yaml'), 'name: crashy2\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: node w.mjs\n');
  writeFileSync(join(dir, 'w.mjs'), 'console.error("dying"); process.exit(3);');
  const cfg = join(root, 'crashy2.yaml');
  writeFileSync(cfg, 'workers: []\n');
  const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 20, crashLoopExits: 3, crashWindowMs: 10_000, log: () => undefined });
  try {
    const [entry] = parseWorkerEntries(cfg, [{ name: 'crashy2', path: dir, replicas: 2 }]);
    await s.start(entry!);
    await eventually(() => assert.equal(s.get('crashy2')!.status, 'crash-loop'), 10_000);
    // 3 exits per replica: 6 in all, the first 5 restarted (a single replica: 3, the first 2).
    assert.match(String(s.get('crashy2')!.last_error), /^exited 6 times within 10s \(last: exit code 3: dying\)/);
    assert.equal(s.get('crashy2')!.restarts, 5);
  } finally {
    await s.stopAll();
  }
});
