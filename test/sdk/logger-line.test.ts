/**
 * The TypeScript Logger's local line names the worker and, inside a handler, the function, as the
 * Python SDK's does (issue 25, item 9): `INFO  [log-worker] logs::work working {"n":1}`. Before, it
 * was `INFO working {"n":1}`: in a log shared by several workers, not attributable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startEngine } from '../helpers/engine.js';

const SDK = pathToFileURL(join(fileURLToPath(new URL('.', import.meta.url)), '../../../sdk/typescript/dist/index.js')).href;

test('Logger lines name the worker and the function', async () => {
  const e = await startEngine();
  try {
    const script = `
      import { registerWorker, Logger } from ${JSON.stringify(SDK)};
      const w = registerWorker(${JSON.stringify(e.url)}, { workerName: 'log-worker' });
      const logger = new Logger();
      w.registerFunction('logs::work', (d) => { logger.info('working', { n: d.n }); logger.warn('careful'); return {}; });
      await w.ready(5000);
      logger.info('outside');
      await w.trigger({ function_id: 'logs::work', payload: { n: 1 } });
      await w.shutdown();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await new Promise((r) => child.on('close', r));
    assert.equal(code, 0, err);
    assert.match(out, /^INFO  \[log-worker\] outside$/m);
    assert.match(out, /^INFO  \[log-worker\] logs::work working \{"n":1\}$/m);
    assert.match(err, /^WARN  \[log-worker\] logs::work careful$/m);
  } finally {
    await e.stop();
  }
});
