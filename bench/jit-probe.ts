/**
 * One V8 optimisation probe, run by bench/jit-probes.ts in a process of its own:
 * `node --allow-natives-syntax dist/bench/jit-probe.js <probe> <primed|control>` prints
 * `{"before": <status>, "after": <status>}`; `node dist/bench/jit-probe.js --list` the probes.
 *
 * The call path's rare branches (src/engine/hot/README.md, "Priming at load") are run once at load
 * with type feedback, so that optimised code does not deoptimise the first time it reaches them.
 * A probe forces a function's optimisation, crosses the rare branch, and reads whether the function
 * is still optimised. Each probe also runs on a `control`: a copy of the same code without the
 * priming, which must deoptimise, or the probe proves nothing (a V8 that changed its heuristics or
 * its status bits would show up there).
 */
import { decodeFrame } from 'svc-sdk/protocol';
import { textFrame } from 'svc-sdk/internal';
import { hex12 } from '../src/engine/hot/hex12.js';
import { LogRing } from '../src/engine/hot/log-ring.js';
import { ChurnMap } from '../src/engine/hot/shared-with-sdk.js';
import { SpanRing } from '../src/engine/hot/span-ring.js';

/**
 * V8's intrinsics, which parse only with --allow-natives-syntax: written as Function bodies, so that
 * TypeScript need not parse them, and made when a probe runs.
 */
type Intrinsic = (f: unknown) => number;
const natives = (body: string): Intrinsic => new Function('f', body) as Intrinsic;

/** `target`: the function whose status is read; `step(i)`: one call of the path, i from 0 to 4299. */
interface Probe {
  target: unknown;
  step: (i: number) => unknown;
}

// ---- ChurnMap: its move to a new Map at the 4096th write -------------------------------------------

class UnprimedChurnMap<K, V> {
  private m = new Map<K, V>();
  private writes = 0;
  set(k: K, v: V): this {
    this.m.set(k, v);
    if (++this.writes >= 4096) {
      this.writes = 0;
      this.m = new Map(this.m);
    }
    return this;
  }
  delete(k: K): boolean {
    return this.m.delete(k);
  }
}

// ---- hex12: a new block of 4096 numbers ------------------------------------------------------------

const LOW = Array.from({ length: 4096 }, (_, k) => k.toString(16).padStart(3, '0'));
let highOf = -1;
let highHex = '';
function unprimedHex(n: number): string {
  const high = Math.floor(n / 4096);
  if (high !== highOf) {
    highOf = high;
    highHex = high.toString(16).padStart(9, '0');
  }
  return highHex + LOW[n & 4095]!;
}

// ---- decodeFrame: the first frame long enough for its depth check ----------------------------------

/** decodeFrame's shape: parse, then count brackets and walk only for a frame that could be deep. */
function atLeast(text: string, n: number): boolean {
  let count = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++count >= n) return true;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++count >= n) return true;
  return false;
}
function over(o: unknown, left: number): boolean {
  if (Array.isArray(o)) {
    for (let i = 0; i < o.length; i++) {
      const x: unknown = o[i];
      if (typeof x === 'object' && x !== null && (left === 0 || over(x, left - 1))) return true;
    }
    return false;
  }
  for (const k in o as Record<string, unknown>) {
    const x = (o as Record<string, unknown>)[k];
    if (typeof x === 'object' && x !== null && (left === 0 || over(x, left - 1))) return true;
  }
  return false;
}
function unprimedDecode(text: string): { ok: boolean; msg?: unknown; error?: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
  if (text.length > 256 && atLeast(text, 129) && over(v, 127)) return { ok: false };
  return { ok: true, msg: v };
}
/** A call frame too short to check until well after optimisation, then long ones of few and of many brackets. */
const SHORT = '{"type":"invokefunction","function_id":"a::b","invocation_id":"i","data":{"a":1}}';
const LONG = '{"type":"invokefunction","function_id":"a::b","invocation_id":"i","data":{"s":"' + 'x'.repeat(300) + '","a":[1,{"b":2}]}}';
const WIDE = '{"type":"invokefunction","function_id":"a::b","invocation_id":"i","data":[' + '{"a":[1]},'.repeat(70) + '{}]}';
// Long frames only in the last 50 calls: too few for V8 to optimise the function again before the status is read.
const frame = (i: number): string => (i < 4250 ? SHORT : i % 2 ? LONG : WIDE);

// ---- the span ring's first wrap -------------------------------------------------------------------

/** The span ring as it was with a branch at the wrap (the primed ring has none). */
class BranchingRing {
  private next = 0;
  private count = 0;
  private readonly errs: Array<string | null>;
  private chars = 0;
  constructor(private readonly n: number) {
    this.errs = new Array<string | null>(n).fill(null);
  }
  private slot(): number {
    const i = this.next;
    this.next = i + 1 === this.n ? 0 : i + 1;
    if (this.count < this.n) this.count++;
    else this.drop(i);
    return i;
  }
  private drop(i: number): void {
    const e = this.errs[i];
    if (e) this.chars -= e.length;
    this.errs[i] = null;
  }
  record(): void {
    const i = this.slot();
    this.errs[i] = null;
  }
}

// ---- the log ring's byte eviction -----------------------------------------------------------------

/** The log ring's add with its eviction over the byte budget, without the priming. */
class UnprimedLogRing {
  private next = 0;
  private seq = 0;
  private bytes = 0;
  private first = 1;
  private readonly sizes: Float64Array;
  private readonly messages: string[];
  constructor(
    private readonly capacity: number,
    private readonly maxBytes: number,
  ) {
    this.sizes = new Float64Array(capacity);
    this.messages = new Array<string>(capacity).fill('');
  }
  addLine(message: string, size: number): number {
    const i = this.next;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    const seq = ++this.seq;
    this.bytes += size - this.sizes[i]!;
    this.sizes[i] = size;
    this.messages[i] = message;
    if (this.bytes > this.maxBytes) this.giveUpOldest();
    return seq;
  }
  private giveUpOldest(): void {
    let seq = Math.max(this.first, this.seq - this.capacity + 1);
    while (this.bytes > this.maxBytes && seq < this.seq) {
      const j = (seq - 1) % this.capacity;
      this.bytes -= this.sizes[j]!;
      this.sizes[j] = 0;
      this.messages[j] = '';
      seq++;
    }
    this.first = seq;
  }
}
/** 60 characters a line: the ring reaches its budget at line 4250, after the function is optimised. */
const LINE = 60;
const LOG_BUDGET = 4250 * LINE;

// ---- textFrame: the first frame of 64 KiB or more -------------------------------------------------

/** textFrame's length field without the priming (server frames: no mask). */
function unprimedTextFrame(text: string): Buffer {
  const n = Buffer.byteLength(text);
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const head = 2 + lengthBytes;
  const out = Buffer.allocUnsafe(head + n);
  out[0] = 0x81;
  out[1] = lengthBytes === 0 ? n : lengthBytes === 2 ? 126 : 127;
  if (lengthBytes === 2) out.writeUInt16BE(n, 2);
  else if (lengthBytes === 8) {
    out.writeUInt32BE(Math.floor(n / 0x1_0000_0000), 2);
    out.writeUInt32BE(n >>> 0, 6);
  }
  out.write(text, head, 'utf8');
  return out;
}
const CALL_FRAME = '{"type":"invocationresult","invocation_id":"i","function_id":"a::b","result":{"c":' + '1'.repeat(120) + '}}';
const BIG_FRAME = 'x'.repeat(70_000);
// 64 KiB frames only in the last 50 calls, as in decode-frame.
const sized = (i: number): string => (i < 4250 ? CALL_FRAME : BIG_FRAME);

const PROBES: Record<string, { what: string; primed: () => Probe; control: () => Probe }> = {
  'churn-map': {
    what: 'ChurnMap.set through its first move to a new Map (4096th write)',
    primed: () => {
      const m = new ChurnMap<number, number>();
      return { target: ChurnMap.prototype.set, step: (i) => (m.set(i, i), m.delete(i)) };
    },
    control: () => {
      const m = new UnprimedChurnMap<number, number>();
      return { target: UnprimedChurnMap.prototype.set, step: (i) => (m.set(i, i), m.delete(i)) };
    },
  },
  hex12: {
    what: 'hex12, inlined into an optimised caller, into a new 4096-number block',
    primed: () => {
      const step = (i: number): number => hex12(i).length;
      return { target: step, step };
    },
    control: () => {
      const step = (i: number): number => unprimedHex(i).length;
      return { target: step, step };
    },
  },
  'decode-frame': {
    what: "decodeFrame at the first frame long enough for its depth check",
    primed: () => ({ target: decodeFrame, step: (i) => decodeFrame(frame(i)).ok }),
    control: () => ({ target: unprimedDecode, step: (i) => unprimedDecode(frame(i)).ok }),
  },
  'text-frame': {
    what: 'textFrame (the frame writer) at the first frame of 64 KiB or more',
    primed: () => ({ target: textFrame, step: (i) => textFrame(sized(i), false).length }),
    control: () => ({ target: unprimedTextFrame, step: (i) => unprimedTextFrame(sized(i)).length }),
  },
  'span-ring': {
    what: "SpanRing.record at the ring's first wrap (capacity 4200)",
    primed: () => {
      const ring = new SpanRing(4200);
      const src = { idNumber: 0, traceId: '', parentSpanId: '', declaredParentSpanId: '', functionId: 'f', caller: null, callee: { id: 'c', name: 'c' }, startedAt: 0 };
      return {
        target: SpanRing.prototype.record,
        step: (i) => {
          src.idNumber = i + 1;
          ring.record(src, 'ok', undefined);
        },
      };
    },
    control: () => {
      const ring = new BranchingRing(4200);
      return { target: BranchingRing.prototype.record, step: () => ring.record() };
    },
  },
  'log-ring': {
    what: 'LogRing.addLine when the lines first fill max_log_bytes',
    primed: () => {
      const ring = new LogRing(8192, LOG_BUDGET);
      return { target: LogRing.prototype.addLine, step: () => ring.addLine(1, false, 'line', undefined, undefined, undefined, undefined, undefined, undefined, 0, LINE) };
    },
    control: () => {
      const ring = new UnprimedLogRing(8192, LOG_BUDGET);
      return { target: UnprimedLogRing.prototype.addLine, step: () => ring.addLine('line', LINE) };
    },
  },
};

/** Optimise `target` after 1000 steps, read its status, take 3300 more steps (past 4096), read it again. */
function run(p: Probe): { before: number; after: number } {
  const prepare = natives('%PrepareFunctionForOptimization(f); return 0;');
  const optimizeOnNextCall = natives('%OptimizeFunctionOnNextCall(f); return 0;');
  const status = natives('return %GetOptimizationStatus(f);');
  // A first call before V8 keeps feedback for the function, as on an engine's first call.
  p.step(0);
  prepare(p.target);
  for (let i = 1; i < 1000; i++) p.step(i);
  optimizeOnNextCall(p.target);
  p.step(1000);
  const before = status(p.target);
  for (let i = 1001; i < 4300; i++) p.step(i);
  return { before, after: status(p.target) };
}

const [name, variant] = process.argv.slice(2);
const probe = PROBES[name ?? ''];
if (name === '--list') {
  process.stdout.write(JSON.stringify(Object.entries(PROBES).map(([probeName, p]) => ({ name: probeName, what: p.what }))));
} else if (probe && (variant === 'primed' || variant === 'control')) {
  process.stdout.write(JSON.stringify(run(probe[variant]())));
} else {
  process.stderr.write(`usage: node --allow-natives-syntax jit-probe.js <${Object.keys(PROBES).join('|')}> <primed|control> | --list\n`);
  process.exitCode = 2;
}
