/**
 * The observer filter language against the answers of iii's own evaluator: observe-filter-vectors.json
 * was written by observe-filter-vectors.py run with PyPI iii-sdk 0.25.0 (`iii.filter.compile_filter`),
 * each filter either refused (INVALID_FILTER) or answered for each of the documents.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FilterError, compileFilter, type FilterDoc } from '../../src/engine/observe-filter.js';

interface Vectors {
  docs: FilterDoc[];
  vectors: { filter: unknown; matches?: boolean[]; error?: string }[];
}
const VECTORS = JSON.parse(readFileSync(fileURLToPath(new URL('../../../test/engine/observe-filter-vectors.json', import.meta.url)), 'utf8')) as Vectors;

test('every vector answers as iii-sdk 0.25.0 does', () => {
  assert.ok(VECTORS.vectors.length > 50);
  for (const v of VECTORS.vectors) {
    const name = JSON.stringify(v.filter).slice(0, 120);
    if (v.error !== undefined) {
      assert.throws(() => compileFilter(v.filter), (e: unknown) => e instanceof FilterError && e.code === 'INVALID_FILTER', name);
      continue;
    }
    const f = compileFilter(v.filter);
    assert.deepEqual(VECTORS.docs.map((d) => f.matches(d)), v.matches, name);
  }
});

test('absent or null filters match everything; a refusal names the offending part', () => {
  assert.equal(compileFilter(undefined).matchAll, true);
  assert.equal(compileFilter(null).matches({}), true);
  assert.throws(() => compileFilter({ 'input.amount': 5 }), /`input\.amount`: expected an operator object/);
  assert.throws(() => compileFilter({ 'nope.x': { $eq: 1 } }), /unknown root `nope`/);
});
