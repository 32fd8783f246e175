import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';

/**
 * The call path's rare branches (ChurnMap's move to a new Map every 4096 writes, hex12's new block
 * every 4096 numbers) are run once at load with type feedback, so that optimised code does not
 * deoptimise the first time it reaches them (sdk/typescript/src/churn-map.ts, src/engine/traces.ts;
 * bench/RESULTS.md, session 5). These probes force a function's optimisation with V8's natives
 * syntax, cross the rare branch, and read whether the function is still optimised. Each probe also
 * runs on an unprimed copy of the same code, which must deoptimise: otherwise the probe proves
 * nothing (and a V8 that changed its status bits would show up here).
 */

const TRACES = new URL('../../src/engine/traces.js', import.meta.url).href;

/** V8's optimisation status bit "optimised" (%GetOptimizationStatus). */
const OPTIMIZED = 16;

function probe(body: string): { before: number; after: number } {
  const script = `
    ${body}
    // A first call before V8 keeps feedback for the function, as on an engine's first call.
    step(0);
    %PrepareFunctionForOptimization(target);
    for (let i = 1; i < 1000; i++) step(i);
    %OptimizeFunctionOnNextCall(target);
    step(1000);
    const before = %GetOptimizationStatus(target);
    for (let i = 1001; i < 4300; i++) step(i);
    process.stdout.write(JSON.stringify({ before, after: %GetOptimizationStatus(target) }));
  `;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out) as { before: number; after: number };
}

const UNPRIMED_MAP = `class Unprimed {
  constructor() { this.m = new Map(); this.writes = 0; }
  set(k, v) { this.m.set(k, v); if (++this.writes >= 4096) { this.writes = 0; this.m = new Map(this.m); } return this; }
  delete(k) { return this.m.delete(k); }
}`;

const UNPRIMED_HEX = `const LOW = Array.from({ length: 4096 }, (_, k) => k.toString(16).padStart(3, '0'));
let highOf = -1, highHex = '';
function unprimedHex(n) {
  const high = Math.floor(n / 4096);
  if (high !== highOf) { highOf = high; highHex = high.toString(16).padStart(9, '0'); }
  return highHex + LOW[n & 4095];
}`;

/** decodeFrame's shape: parse, then count brackets and walk only for a frame that could be deep. */
const UNPRIMED_DECODE = `function atLeast(text, n) {
  let count = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++count >= n) return true;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++count >= n) return true;
  return false;
}
function over(o, left) {
  if (Array.isArray(o)) { for (let i = 0; i < o.length; i++) { const x = o[i]; if (typeof x === 'object' && x !== null && (left === 0 || over(x, left - 1))) return true; } return false; }
  for (const k in o) { const x = o[k]; if (typeof x === 'object' && x !== null && (left === 0 || over(x, left - 1))) return true; }
  return false;
}
function unprimedDecode(text) {
  let v;
  try { v = JSON.parse(text); } catch (e) { return { ok: false, error: e.message }; }
  if (text.length > 256 && atLeast(text, 129) && over(v, 127)) return { ok: false };
  return { ok: true, msg: v };
}`;

/** A call frame too short to check, a long one of few brackets, and one of many brackets. */
const FRAMES = `const SHORT = '{"type":"invokefunction","function_id":"a::b","invocation_id":"i","data":{"a":1}}';
  const LONG = '{"type":"invokefunction","function_id":"a::b","invocation_id":"i","data":{"s":"' + 'x'.repeat(300) + '","a":[1,{"b":2}]}}';
  const WIDE = '{"type":"invokefunction","function_id":"a::b","invocation_id":"i","data":[' + '{"a":[1]},'.repeat(70) + '{}]}';
  const frame = (i) => (i < 4250 ? SHORT : i % 2 ? LONG : WIDE);`;

describe('optimised call path across rare branches', () => {
  test('ChurnMap.set stays optimised through its first move to a new Map; an unprimed copy does not', () => {
    const primed = probe(`import { ChurnMap } from 'svc-sdk/internal';
      const m = new ChurnMap(); const target = ChurnMap.prototype.set;
      const step = (i) => { m.set(i, i); m.delete(i); };`);
    const control = probe(`${UNPRIMED_MAP}
      const m = new Unprimed(); const target = Unprimed.prototype.set;
      const step = (i) => { m.set(i, i); m.delete(i); };`);
    assert.ok(primed.before & OPTIMIZED && control.before & OPTIMIZED, `both optimised first: ${JSON.stringify({ primed, control })}`);
    assert.ok(!(control.after & OPTIMIZED), `the unprimed copy deoptimises (else the probe is blind): ${JSON.stringify(control)}`);
    assert.ok(primed.after & OPTIMIZED, `ChurnMap.set deoptimised at its first move: ${JSON.stringify(primed)}`);
  });

  test('hex12 stays optimised into a new 4096-number block; an unprimed copy does not', () => {
    // The number passes 4096 during the second loop: hex12 inlined into an optimised caller.
    const primed = probe(`import { hex12 } from '${TRACES}';
      function step(i) { return hex12(i).length; } const target = step;`);
    const control = probe(`${UNPRIMED_HEX}
      function step(i) { return unprimedHex(i).length; } const target = step;`);
    assert.ok(primed.before & OPTIMIZED && control.before & OPTIMIZED, `both optimised first: ${JSON.stringify({ primed, control })}`);
    assert.ok(!(control.after & OPTIMIZED), `the unprimed copy deoptimises (else the probe is blind): ${JSON.stringify(control)}`);
    assert.ok(primed.after & OPTIMIZED, `hex12 deoptimised entering a new block: ${JSON.stringify(primed)}`);
  });

  test('decodeFrame stays optimised when the first frame long enough for its depth scan arrives; an unprimed copy does not', () => {
    // Short frames until well after the function is optimised; long ones in the last 50 calls, too few
    // for V8 to optimise it again before the probe reads its status.
    const primed = probe(`import { decodeFrame } from 'svc-sdk/protocol';
      ${FRAMES}
      const target = decodeFrame; const step = (i) => decodeFrame(frame(i)).ok;`);
    const control = probe(`${UNPRIMED_DECODE}
      ${FRAMES}
      const target = unprimedDecode; const step = (i) => unprimedDecode(frame(i)).ok;`);
    assert.ok(primed.before & OPTIMIZED && control.before & OPTIMIZED, `both optimised first: ${JSON.stringify({ primed, control })}`);
    assert.ok(!(control.after & OPTIMIZED), `the unprimed copy deoptimises (else the probe is blind): ${JSON.stringify(control)}`);
    assert.ok(primed.after & OPTIMIZED, `decodeFrame deoptimised at its first long frame: ${JSON.stringify(primed)}`);
  });

  test('TraceBuffer.record stays optimised when the span ring first wraps; an unprimed copy does not', () => {
    // Capacity 4200: the ring wraps 100 calls before the probe reads the status.
    const primed = probe(`import { TraceBuffer } from '${TRACES}';
      const b = new TraceBuffer(4200);
      const src = { no: 0, traceId: '', parentSpanId: '', functionId: 'f', caller: null, callee: { id: 'c', name: 'c' }, startedAt: 0 };
      const target = TraceBuffer.prototype.record; const step = (i) => { src.no = i + 1; b.record(src, 'ok', undefined); };`);
    const control = probe(`class Ring {
        constructor(n) { this.n = n; this.next = 0; this.count = 0; this.errs = new Array(n).fill(null); this.chars = 0; }
        slot() { const i = this.next; this.next = i + 1 === this.n ? 0 : i + 1; if (this.count < this.n) this.count++; else this.drop(i); return i; }
        drop(i) { const e = this.errs[i]; if (e) this.chars -= e.length; this.errs[i] = null; }
        record() { const i = this.slot(); this.errs[i] = null; }
      }
      const b = new Ring(4200); const target = Ring.prototype.record; const step = () => b.record();`);
    assert.ok(primed.before & OPTIMIZED && control.before & OPTIMIZED, `both optimised first: ${JSON.stringify({ primed, control })}`);
    assert.ok(!(control.after & OPTIMIZED), `the copy with a branch at the wrap deoptimises (else the probe is blind): ${JSON.stringify(control)}`);
    assert.ok(primed.after & OPTIMIZED, `TraceBuffer.record deoptimised at the ring's first wrap: ${JSON.stringify(primed)}`);
  });
});
