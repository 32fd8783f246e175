import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closestKey, unknownKeyMessage } from 'svc-sdk/internal';

test('closestKey: typos (a letter missing, extra, swapped, replaced, case) find their key; unrelated words none', () => {
  const known = ['name', 'builtin', 'path', 'runtime', 'replicas', 'env', 'config', 'token'];
  assert.equal(closestKey('replcas', known), 'replicas');
  assert.equal(closestKey('repilcas', known), 'replicas');
  assert.equal(closestKey('Replicas', known), 'replicas');
  assert.equal(closestKey('confg', known), 'config');
  assert.equal(closestKey('nmae', known), 'name');
  assert.equal(closestKey('prot', ['host', 'port']), 'port');
  assert.equal(closestKey('script', ['name', 'runtime', 'scripts']), 'scripts');
  assert.equal(closestKey('colour', known), undefined);
  assert.equal(closestKey('x', ['y']), 'y');
  assert.equal(closestKey('x'.repeat(10_000), known), undefined);
  // A unit or kind left off: too many edits for a typo, but the one key it begins.
  assert.equal(closestKey('lease', ['redis_url', 'node_id', 'lease_ms', 'prefix']), 'lease_ms');
  assert.equal(closestKey('node', ['redis_url', 'node_id', 'lease_ms', 'prefix']), 'node_id');
  assert.equal(closestKey('max', ['max_jobs', 'max_bytes']), undefined);
});

test('unknownKeyMessage: the key, the suggestion, every known key', () => {
  assert.equal(unknownKeyMessage('prot', ['host', 'port']), 'unknown key "prot" (did you mean "port"?); known keys: host, port');
  assert.equal(unknownKeyMessage('zzz', ['host', 'port']), 'unknown key "zzz"; known keys: host, port');
  assert.equal(unknownKeyMessage('enigne', ['engine', 'workers'], 'top-level key'), 'unknown top-level key "enigne" (did you mean "engine"?); known keys: engine, workers');
});
