/**
 * A worker's log file: output lines stamped with time and replica (log-stamp.ts), and the failure
 * report's tail of one replica's latest run without the stamps (output-tail.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { appendStamped, STAMP } from '../../src/supervisor/log-stamp.js';
import { lastOutputLines, tellingLine } from '../../src/supervisor/output-tail.js';

const T = '2026-11-24T11:00:00.000Z';

describe('worker log files', () => {
  test('lines are stamped whole: a line split across writes, two streams, a last line without newline, an endless line cut', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-stamp-'));
    try {
      const file = join(dir, 'w.log');
      const out = new PassThrough();
      const err = new PassThrough();
      const done = appendStamped(file, 3, [out, err]);
      out.write('one, ');
      err.write('on stderr\n');
      out.write('still one\ntwo\nthree without newline');
      for (let i = 0; i < 10; i++) err.write('x'.repeat(10 * 1024));
      out.end();
      err.end();
      await done;
      const lines = readFileSync(file, 'utf8').split('\n').slice(0, -1);
      for (const l of lines) assert.match(l, STAMP);
      const bare = lines.map((l) => l.replace(STAMP, ''));
      assert.deepEqual(bare.filter((l) => !l.startsWith('x')), ['on stderr', 'one, still one', 'two', 'three without newline']);
      // 100 KiB without a newline: written once 64 KiB of it are held, the rest at the end.
      assert.deepEqual(bare.filter((l) => l.startsWith('x')).map((l) => l.length), [70 * 1024, 30 * 1024]);
      assert.ok(lines.every((l) => / \[3\] /.test(l)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the tail of one replica\'s latest run, without stamps, other replicas\' lines left out', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-tail-'));
    try {
      const file = join(dir, 'w.log');
      writeFileSync(
        file,
        [
          `=== ${T} starting w: node w.mjs`,
          `${T} [0] old run of 0`,
          `=== ${T} starting w [replica 1]: node w.mjs`,
          `${T} [1] replica 1 says hi`,
          '[install] installing',
          `=== ${T} starting w: node w.mjs`,
          `${T} [0] new run of 0`,
          `${T} [1] replica 1 failed`,
          `${T} [0] Error: boom`,
          '',
        ].join('\n'),
      );
      assert.deepEqual(lastOutputLines(file, 0), ['new run of 0', 'Error: boom']);
      assert.deepEqual(lastOutputLines(file, 1), ['replica 1 says hi', 'replica 1 failed']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Before: the report of a TypeScript worker with a syntax error was "exit code 1: Node.js v20.20.2",
  // and its 12-line tail held only esbuild's frames, not the error.
  test("a Node exit's tail keeps the error above its frames, and the telling line is the error, not Node's trailer", () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-tail-'));
    try {
      const file = join(dir, 'w.log');
      const frames = Array.from({ length: 10 }, (_, i) => `    at frame${i} (/w/node_modules/esbuild/lib/main.js:${i}:1)`);
      const printed = [
        '',
        'node:internal/modules/run_main:123',
        '    triggerUncaughtException(',
        '    ^',
        'Error [TransformError]: Transform failed with 1 error:',
        '/w/src/worker.ts:21:1: ERROR: Expected ")" but found ";"',
        ...frames,
        '',
        'Node.js v20.20.2',
      ];
      writeFileSync(file, [`=== ${T} starting w: node --import tsx src/worker.ts`, ...printed.map((l) => `${T} [0] ${l}`), ''].join('\n'));
      const tail = lastOutputLines(file, 0);
      assert.deepEqual(tail.slice(-6), ['Error [TransformError]: Transform failed with 1 error:', '/w/src/worker.ts:21:1: ERROR: Expected ")" but found ";"', frames[0], frames[1], '    … 8 more frames', 'Node.js v20.20.2']);
      assert.equal(tellingLine(tail), '/w/src/worker.ts:21:1: ERROR: Expected ")" but found ";"');
      // A Python traceback ends with its error, which stays the telling line; short frame runs stay whole.
      assert.equal(tellingLine(['Traceback (most recent call last):', '  File "w.py", line 1, in <module>', 'NameError: name \'x\' is not defined']), "NameError: name 'x' is not defined");
      assert.equal(tellingLine(['Error: boom', '    at a (w.mjs:1:1)', '', 'Node.js v22.1.0']), 'Error: boom');
      // An error with properties of its own (svc-sdk's InvocationError) is printed with them in braces after its stack.
      const invocationError = [
        '/w/node_modules/svc-sdk/src/trigger-registry.ts:132',
        '    const err = new InvocationError(m.error.code, m.error.message, m.function_id);',
        '                ^',
        'InvocationError: cron trigger 3f4e for orders::report: expression "* * * *" must have 5 fields',
        '    at TriggerRegistry.onResult (/w/node_modules/svc-sdk/src/trigger-registry.ts:132:17)',
        '    at WorkerSession.onMessage (/w/node_modules/svc-sdk/src/worker-session.ts:120:23)',
        '    … 7 more frames',
        "  code: 'invalid_expression',",
        "  functionId: 'orders::report',",
        '  stacktrace: undefined',
        '}',
        'Node.js v20.20.2',
      ];
      assert.equal(tellingLine(invocationError), 'InvocationError: cron trigger 3f4e for orders::report: expression "* * * *" must have 5 fields');
      // Short stacks are not collapsed: the frame that opens the block is passed over too.
      assert.equal(tellingLine(['Error: boom', '    at a (w.mjs:1:1) {', "  code: 'E_BOOM'", '}', 'Node.js v20.20.2']), 'Error: boom');
      // Without frames the block opens on the error's own line.
      assert.equal(tellingLine(['Error: boom {', "  code: 'E_BOOM',", '  detail: {', '    nested: 1', '  }', '}']), 'Error: boom');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
