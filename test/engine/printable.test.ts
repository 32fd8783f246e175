/**
 * Log forging (issue 17, item 9): text a client sent, printed by the engine or the CLI, can neither
 * drive the terminal (escape codes) nor fake a line (line breaks, bidi reordering). The attack
 * strings go through the one helper and every formatter that uses it; e2e/log-forging.test.ts sends
 * them through a real engine and the real CLI.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError } from 'svc-sdk';
import { printable, printableJson } from '../../src/engine/printable.js';
import { formatLogLine } from '../../src/cli/commands/logs.js';
import { formatError } from '../../src/cli/client.js';
import { table } from '../../src/cli/project.js';

/** What a terminal would act on, or show in another order than written. */
const DANGEROUS = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;

const ATTACKS = [
  '\u001b[2J\u001b[H', // clear the screen
  'ok\n2026-01-01T00:00:00.000Z INFO  engine worker svc-state left: worker disconnected',
  'ok\r2026-01-01T00:00:00.000Z INFO  overwrite the line',
  '\u009b31mred via an 8-bit CSI\u009b0m',
  'DEL\u007f and NEL\u0085',
  'evil\u202egpj.exe', // shows as "evilexe.jpg"
  'isolate\u2066x\u2069 and mark\u200f',
  'zero\u200bwidth\u200d state\ufeff::get',
  'line\u2028separator\u2029paragraph',
  'tab\there and a NUL\u0000 and a bell\u0007',
];

describe('printable: client text made inert for a terminal', () => {
  test('every attack string comes out on one line with nothing a terminal acts on', () => {
    for (const a of ATTACKS) {
      const p = printable(a);
      assert.doesNotMatch(p, DANGEROUS, `${JSON.stringify(a)} → ${JSON.stringify(p)}`);
      assert.ok(!p.includes('\n'));
    }
    assert.equal(printable('a\nb\r\tc\u001b[2J'), 'a\\nb\\r\\tc\\u001b[2J');
    assert.equal(printable('evil\u202egpj'), 'evil\\u202egpj');
    assert.equal(printable('\u0085\u009b\u007f'), '\\u0085\\u009b\\u007f');
  });

  test('ordinary text is unchanged: letters of any script, emoji, backslashes, quotes', () => {
    for (const s of ['worker math-worker registered (python, pid 42)', 'é ü 日本語 עברית 🙂', 'C:\\path\\to "x"', '']) assert.equal(printable(s), s);
  });

  test('printableJson keeps JSON valid and equal to what was sent, pretty-printed JSON too', () => {
    for (const a of ATTACKS) {
      const json = JSON.stringify({ message: a, list: [a] });
      const p = printableJson(json);
      assert.doesNotMatch(p, DANGEROUS);
      assert.deepEqual(JSON.parse(p), { message: a, list: [a] });
      const pretty = printableJson(JSON.stringify([{ message: a }], null, 2));
      assert.deepEqual(JSON.parse(pretty), [{ message: a }]);
      for (const line of pretty.split('\n')) assert.doesNotMatch(line, DANGEROUS);
    }
  });
});

describe('the CLI formatters escape what workers chose', () => {
  test('svc logs: a line stays one line, its message, worker name, function and data escaped', () => {
    for (const a of ATTACKS) {
      const line = formatLogLine({ seq: 1, time: '2026-01-01T00:00:00.000Z', level: 'info', message: a, source: 'worker', worker_name: a, function_id: a, data: { a } });
      assert.doesNotMatch(line, DANGEROUS, JSON.stringify(line));
      assert.ok(line.startsWith('2026-01-01T00:00:00.000Z INFO  '));
    }
  });

  test('svc trigger / every command: error lines', () => {
    for (const a of ATTACKS) {
      assert.doesNotMatch(formatError(new InvocationError(a, a)), DANGEROUS);
      assert.doesNotMatch(formatError(new Error(a)), DANGEROUS);
    }
  });

  test('svc worker list: table cells', () => {
    const out = table(ATTACKS.map((a) => ({ name: a, functions: [a, a] })), ['name', 'functions']);
    assert.equal(out.split('\n').length, ATTACKS.length + 1, 'one row per worker');
    for (const line of out.split('\n')) assert.doesNotMatch(line, DANGEROUS);
  });
});
