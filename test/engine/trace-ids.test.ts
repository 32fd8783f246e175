/**
 * Trace ids made from a prefix and a counter (sdk/typescript/src/trace-ids.ts): svc-http's and the
 * console's traceparents, the engine's own new traces (src/engine/ids.ts) and its log fires: valid
 * W3C ids, unique, and sampled by engine.telemetry.sampling_ratio as random ids would be.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { counterTraceTail, traceparentMaker } from 'svc-sdk/internal';
import { IdGenerator } from '../../src/engine/ids.js';
import { namesNoParent, parseTraceparent } from '../../src/engine/traces.js';

test('valid W3C traceparents, unique, in a trace of their own (the parent id names no span)', () => {
  const next = traceparentMaker('0af7651916cd43dd');
  const seen = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const tp = next();
    const p = parseTraceparent(tp);
    assert.ok(p, tp);
    assert.equal(p.flags, '01');
    assert.ok(p.traceId.startsWith('0af7651916cd43dd'), tp);
    assert.ok(namesNoParent(p.traceId, p.parentId), tp);
    seen.add(p.traceId);
  }
  assert.equal(seen.size, 5000);
  // Two svc-http processes (replicas, restarts) draw their own prefixes.
  assert.notEqual(parseTraceparent(traceparentMaker()())!.traceId, parseTraceparent(traceparentMaker()())!.traceId);
});

test("engine.telemetry.sampling_ratio samples one svc-http's traces at that ratio, not all or none", () => {
  // Before: the plain counter in the id's last words gave each svc-http 0 % or 100 % for its first
  // 2^16 requests and more, by its prefix.
  const sampler = new TraceIdRatioBasedSampler(0.25);
  for (const prefix of ['0af7651916cd43dd', 'ffffffffffffffff', '0000000000000001', 'b7ad6b7169203331']) {
    const next = traceparentMaker(prefix);
    let sampled = 0;
    for (let i = 0; i < 4000; i++) {
      if (sampler.shouldSample(undefined, parseTraceparent(next())!.traceId).decision === SamplingDecision.RECORD_AND_SAMPLED) sampled++;
    }
    assert.ok(sampled > 800 && sampled < 1200, `prefix ${prefix}: ${sampled} of 4000 sampled at 0.25`);
  }
});

/** How many of `ids` TraceIdRatioBasedSampler(ratio) keeps. */
function sampledOf(ids: Iterable<string>, ratio: number): number {
  const sampler = new TraceIdRatioBasedSampler(ratio);
  let sampled = 0;
  for (const id of ids) if (sampler.shouldSample(undefined, id).decision === SamplingDecision.RECORD_AND_SAMPLED) sampled++;
  return sampled;
}

test("the engine's own new traces are sampled at sampling_ratio, not all or none", () => {
  // Before: `<random 16><0000><counter as 12 hex>`: the xor of the id's words moved only in its low
  // bits, so one engine exported all of its first 2^32 calls' traces at 0.25, or none.
  for (let run = 0; run < 4; run++) {
    const ids = new IdGenerator();
    const traceIds: string[] = [];
    for (let i = 0; i < 4000; i++) {
      const n = ids.next();
      const tp = parseTraceparent(ids.rootTraceparent(n, n.toString(16).padStart(12, '0')))!;
      assert.equal(tp.traceId, ids.traceId(n));
      assert.equal(tp.parentId, ids.spanId(n));
      traceIds.push(tp.traceId);
    }
    assert.equal(new Set(traceIds).size, 4000);
    const sampled = sampledOf(traceIds, 0.25);
    assert.ok(sampled > 800 && sampled < 1200, `prefix ${ids.tracePrefix}: ${sampled} of 4000 sampled at 0.25`);
  }
});

test('counterTraceTail: 16 hex digits, distinct for distinct counters, across the 2^32 boundary', () => {
  const seen = new Set<string>();
  for (const base of [0, 2 ** 32 - 2000, 2 ** 32, 2 ** 48 - 2000, 2 ** 53 - 2000]) {
    for (let n = base; n < base + 2000; n++) {
      const t = counterTraceTail(n);
      assert.match(t, /^[0-9a-f]{16}$/);
      assert.equal(parseInt(t.slice(0, 8), 16), Math.floor(n / 2 ** 32), `high word of ${n}`);
      seen.add(t);
    }
  }
  assert.equal(seen.size, 10_000);
});
