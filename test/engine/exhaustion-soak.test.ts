/**
 * A short run of the exhaustion soak (bench/exhaustion-soak.ts; the 10-minute run is a bench,
 * bench/RESULTS.md): every attack of issue 17 at once against an engine process with its default
 * limits, ordinary calls going on. It must pass: the engine up, its RSS under the ceiling, ordinary
 * calls served, every attack answered as designed, no error escaping the engine's handlers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const SOAK = new URL('../../bench/exhaustion-soak.js', import.meta.url).pathname;

test('25 s of every exhaustion pattern at once: the engine stays up, within its memory ceiling, and serves', { timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, [SOAK, '--minutes', '0.4'], { encoding: 'utf8', timeout: 110_000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /^PASS: engine up/m);
});
