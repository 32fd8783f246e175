/**
 * The note `svc trigger` adds to function_not_found when the engine that answered may be another
 * project's (src/cli/client.ts, unownedAddressNote), in a directory whose config.yaml does not parse.
 * Its other cases, with a real engine: e2e/cli.test.ts.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unownedAddressNote } from '../../src/cli/client.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-note-'));
const cwd = process.cwd();
after(() => {
  process.chdir(cwd);
  rmSync(dir, { recursive: true, force: true });
});

test('a config.yaml that does not parse: the note says so, not that there is none', () => {
  // Before: "note: there is no config.yaml here, …" beside the file.
  writeFileSync(join(dir, 'config.yaml'), 'engine:\n  port: [oops\n');
  process.chdir(dir);
  const saved = process.env.SVC_URL;
  delete process.env.SVC_URL;
  try {
    assert.equal(
      unownedAddressNote(),
      'note: config.yaml here is not valid (svc --config config.yaml says why), so the engine that answered is the one at the default address ws://localhost:49134; --address (or SVC_URL) names another',
    );
    assert.equal(unownedAddressNote('ws://127.0.0.1:1'), undefined, 'an address given: no note');
  } finally {
    if (saved !== undefined) process.env.SVC_URL = saved;
  }
});
