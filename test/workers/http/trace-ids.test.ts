/**
 * svc-http's traceparents (src/workers/http/trace-ids.ts): valid W3C ids, unique, naming no parent
 * span, and sampled by the engine's sampling_ratio as random ids would be.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { traceparentMaker } from '../../../src/workers/http/trace-ids.js';
import { namesNoParent, parseTraceparent } from '../../../src/engine/traces.js';

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
