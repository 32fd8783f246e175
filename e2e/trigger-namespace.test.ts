/**
 * `svc trigger --namespace`: a worker in a namespace other than `default` (docs/workers.md,
 * "Replicas and namespaces") is callable from the CLI. Before, the CLI had no way to name one
 * (only an undocumented SVC_NAMESPACE in its environment): `svc trigger` answered
 * function_not_found "… registered in namespace(s): ns1" with nothing to do about it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, runSvc, tempDir } from './helpers/cli.js';

describe('svc trigger --namespace', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;
  let neighbour: Worker;
  const away = (args: string[]) => runSvc(['trigger', ...args], { env: { SVC_URL: engine.url } });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir, timeoutMs: 30_000 });
    worker = registerWorker(engine.url, { workerName: 'billing', namespace: 'ns1', echoLogs: false });
    worker.registerFunction('invoices::total', (d: { id: number }) => ({ id: d.id, total: 42 }));
    await worker.ready(10_000);
    // A near id in the default namespace: the hint must still be the namespace, not this one.
    neighbour = registerWorker(engine.url, { workerName: 'reports', echoLogs: false });
    neighbour.registerFunction('invoices::totals', () => ({}));
    await neighbour.ready(10_000);
  });
  after(async () => {
    await worker?.shutdown();
    await neighbour?.shutdown();
    await engine?.stop('SIGTERM', 20_000);
    tmp.remove();
  });

  test('calls the function in the namespace given; without it, says how', async () => {
    const called = await away(['--namespace', 'ns1', 'invoices::total', 'id=7']);
    assert.equal(called.code, 0, called.stderr);
    assert.equal(called.stdout, '{"id":7,"total":42}\n');

    const missed = await away(['invoices::total', 'id=7']);
    assert.equal(missed.code, 1);
    assert.match(missed.stderr, /^error: function_not_found: .*registered in namespace\(s\): ns1/);
    assert.match(missed.stderr, /svc trigger --namespace <namespace>/);
    assert.doesNotMatch(missed.stderr, /did you mean/, 'the id exists in ns1: a near id elsewhere is another function');
  });
});
