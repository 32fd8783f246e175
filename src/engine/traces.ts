import { randomBytes } from 'node:crypto';
import { cutString, head } from './budgets.js';

/**
 * Traces: every routed invocation is one span; spans that share a W3C trace id form one trace.
 * The engine mints the span of each call and forwards `traceparent` = 00-<trace>-<span>-<flags>
 * to the callee, so the calls the callee makes while serving it carry that span as their parent.
 * A call without a (valid) traceparent starts a new trace, so the first routed call of a chain
 * (an HTTP request through svc-http, a CLI call) is its root.
 */

export type SpanStatus = 'ok' | 'error' | 'timeout' | 'stopped' | 'cancelled';

export interface Span {
  trace_id: string;
  span_id: string;
  /** null for the root of a trace (or when the caller's parent span is unknown to us). */
  parent_span_id: string | null;
  function_id: string;
  /** The engine's id of the call (what the callee saw and logged). */
  invocation_id: string;
  caller_worker_id: string | null;
  /** `engine` for calls the engine made itself. */
  caller_worker_name: string;
  callee_worker_id: string;
  callee_worker_name: string;
  /** Epoch milliseconds. */
  start_ms: number;
  duration_ms: number;
  status: SpanStatus;
  error: { code: string; message: string } | null;
}

/** What the console and `engine::traces::list` show for one trace. */
export interface TraceSummary {
  trace_id: string;
  /** The span without a parent in this trace, else the earliest one. */
  root: { function_id: string; caller_worker_name: string; callee_worker_name: string; status: SpanStatus; duration_ms: number };
  start: string;
  /** From the earliest start to the latest end of its spans. */
  duration_ms: number;
  span_count: number;
  error_count: number;
  workers: string[];
}

const HEX = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The trace id, parent span id and flags of a W3C traceparent, or null when it is not one. */
export function parseTraceparent(tp: string | undefined | null): { traceId: string; parentId: string; flags: string } | null {
  if (!tp || tp.length !== 55) return null;
  const m = HEX.exec(tp);
  if (!m || m[1] === '00000000000000000000000000000000' || m[2] === '0000000000000000') return null;
  return { traceId: m[1]!, parentId: m[2]!, flags: m[3]! };
}

/** `xxxxxxxx-xxxx-4xxx-yxxx-` from 10 random bytes' hex (y in 8–b, the RFC 4122 variant). */
function uuidPrefix(): string {
  const h = randomBytes(10).toString('hex');
  const variant = ((parseInt(h[15]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-${variant}${h.slice(16, 19)}-`;
}

/** 2^48: counters render as 12 hex digits. At a million calls a second that is nine years. */
const COUNTER_LIMIT = 2 ** 48;

/** The last 3 hex digits of every number, rendered once. */
const LOW_HEX: readonly string[] = Array.from({ length: 4096 }, (_, k) => k.toString(16).padStart(3, '0'));
/** The upper 9 digits change once per 4096 numbers: the last rendering is kept. */
let highOf = -1;
let highHex = '';

/**
 * `n` as 12 hex digits. Runs on every routed call; rendering only the low 3 digits per call (a table
 * lookup) instead of the whole number costs a tenth (bench/RESULTS.md, session 4).
 */
export function hex12(n: number): string {
  const high = Math.floor(n / 4096);
  if (high !== highOf) {
    highOf = high;
    highHex = high.toString(16).padStart(9, '0');
  }
  return highHex + LOW_HEX[n & 4095]!;
}

/**
 * Run hex12's once-per-4096 branch with type feedback recorded before the engine's call path is
 * hot: otherwise the 4097th call reaches optimised code with no feedback for it and deoptimises
 * the call path (session 5, bench/RESULTS.md). V8 records feedback only after a few runs.
 */
for (let k = 0; k < 64; k++) hex12(k * 4096);
highOf = -1;

/**
 * The counter an id of IdGenerator ends in (its last 12 hex digits); NaN or a wrong number for
 * other strings, so a lookup by it must still compare the whole id.
 */
export function counterOf(id: string): number {
  return parseInt(id.slice(-12), 16);
}

/**
 * Ids for the hot path: a random prefix drawn once per engine run plus a 48-bit counter. Unique per
 * run and random across engines, without a crypto call per invocation (randomBytes costs
 * microseconds). Ids are handed out as numbers and rendered as text where they are sent, so the
 * trace buffer keeps numbers, not strings (see TraceBuffer).
 */
export class IdGenerator {
  /** Prefixes are public so that the hot path renders a number's hex once for all three ids. */
  tracePrefix = randomBytes(8).toString('hex') + '0000';
  spanPrefix = randomBytes(2).toString('hex');
  /**
   * Invocation ids sent to callees are UUID-shaped (8-4-4-4-12 hex, version 4 nibble), because iii
   * clients may parse them as UUIDs.
   */
  invocationPrefix = uuidPrefix();
  /** `00-<trace prefix>` and `-<span prefix>`: a new trace's traceparent in four concatenations. */
  private rootHead = '00-' + this.tracePrefix;
  private spanHead = '-' + this.spanPrefix;
  private n = 0;
  /** Bumped when the counter wraps and the prefixes are drawn anew; numbers of an older epoch render wrongly. */
  epoch = 0;

  /** A fresh number, used for one call's invocation id, span id and (for a new trace) trace id. */
  next(): number {
    if (++this.n >= COUNTER_LIMIT) {
      this.tracePrefix = randomBytes(8).toString('hex') + '0000';
      this.spanPrefix = randomBytes(2).toString('hex');
      this.invocationPrefix = uuidPrefix();
      this.rootHead = '00-' + this.tracePrefix;
      this.spanHead = '-' + this.spanPrefix;
      this.n = 1;
      this.epoch++;
    }
    return this.n;
  }

  /** The traceparent of call `hex` (hex12 of its number) when it starts a trace: its trace and span ids are both made from it. */
  rootTraceparent(hex: string): string {
    return this.rootHead + hex + this.spanHead + hex + '-01';
  }

  traceId(n: number): string {
    return this.tracePrefix + hex12(n);
  }

  spanId(n: number): string {
    return this.spanPrefix + hex12(n);
  }

  invocationId(n: number): string {
    return this.invocationPrefix + hex12(n);
  }
}

/** What the engine knows of a call when it ends: the fields of an Invocation that make its span. */
export interface SpanSource {
  /** The number the call's ids were made from (IdGenerator.next). */
  no: number;
  /** The trace id taken from the caller's traceparent; '' when the call started a trace (its id is made from `no`). */
  traceId: string;
  parentSpanId: string;
  functionId: string;
  caller: { id: string; name: string } | null;
  callee: { id: string; name: string };
  /** performance.now() at dispatch. */
  startedAt: number;
}

const STATUSES: readonly SpanStatus[] = ['ok', 'error', 'timeout', 'stopped', 'cancelled'];
const STATUS_INDEX: Record<SpanStatus, number> = { ok: 0, error: 1, timeout: 2, stopped: 3, cancelled: 4 };
/** performance.timeOrigin is a getter; read it once. */
const TIME_ORIGIN = performance.timeOrigin;

/**
 * The most recent spans, in a ring of `capacity`, stored column-wise. Recording one happens on every
 * routed call, so it must not allocate: the ring holds numbers (ids, times, status) and references
 * to strings that live on anyway (function ids from the registry, worker names). A span object per
 * call, kept until the ring wraps, survived young-generation GC and cost about 3 µs per call in
 * promotion and old-space marking (bench/RESULTS.md, session 2). Span objects are made only when
 * someone asks: `engine::traces::list`/`get` scan the ring (about a millisecond for 20 000 spans).
 * When the ring wraps, the oldest spans go first, so an old trace can lose its earliest spans
 * before its latest. The one part of a span of any size, its error, is kept as a copy of its code
 * and message, each cut to `maxValue` characters, and all kept errors together stay within
 * `maxBytes`: beyond it the oldest spans go early.
 */
export class TraceBuffer {
  readonly capacity: number;
  private next = 0;
  private count = 0;
  private epoch: number;
  // One entry per slot. A number of 0 means the matching string column holds the id itself.
  private readonly no: Float64Array;
  private readonly traceIds: string[];
  private readonly spanIds: string[];
  private readonly invocationIds: string[];
  private readonly parents: string[];
  private readonly functionIds: string[];
  private readonly callerIds: (string | null)[];
  private readonly callerNames: string[];
  private readonly calleeIds: string[];
  private readonly calleeNames: string[];
  private readonly starts: Float64Array;
  private readonly durations: Float64Array;
  private readonly statuses: Uint8Array;
  private readonly errors: ({ code: string; message: string } | null)[];
  /** Characters of each slot's kept error (0: none), and of all of them (maxBytes bounds it). */
  private readonly errorSizes: Float64Array;
  private errorChars = 0;

  constructor(
    capacity: number,
    readonly ids = new IdGenerator(),
    readonly maxBytes = Infinity,
    readonly maxValue = Infinity,
  ) {
    const n = Math.max(1, capacity);
    this.capacity = n;
    this.epoch = ids.epoch;
    this.no = new Float64Array(n);
    this.starts = new Float64Array(n);
    this.durations = new Float64Array(n);
    this.statuses = new Uint8Array(n);
    this.errorSizes = new Float64Array(n);
    const strings = (): string[] => new Array<string>(n).fill('');
    this.traceIds = strings();
    this.spanIds = strings();
    this.invocationIds = strings();
    this.parents = strings();
    this.functionIds = strings();
    this.callerIds = new Array<string | null>(n).fill(null);
    this.callerNames = strings();
    this.calleeIds = strings();
    this.calleeNames = strings();
    this.errors = new Array<{ code: string; message: string } | null>(n).fill(null);
  }

  get spanCount(): number {
    return this.count;
  }

  /** Characters of the span errors held. */
  get heldBytes(): number {
    return this.errorChars;
  }

  /** The span of a call that ended now. */
  record(src: SpanSource, status: SpanStatus, error: { code: string; message: string } | undefined): void {
    if (this.ids.epoch !== this.epoch) {
      // The id counter wrapped (after 2^48 calls): numbers in the ring no longer render correctly.
      this.epoch = this.ids.epoch;
      this.count = 0;
    }
    const i = this.slot();
    this.no[i] = src.no;
    this.traceIds[i] = src.traceId;
    this.spanIds[i] = '';
    this.invocationIds[i] = '';
    this.parents[i] = src.parentSpanId;
    this.fill(i, src.functionId, src.caller, src.callee, TIME_ORIGIN + src.startedAt, performance.now() - src.startedAt, status, error ?? null);
  }

  /** A span given whole (tests, tools). */
  add(span: Span): void {
    const i = this.slot();
    this.no[i] = 0;
    this.traceIds[i] = span.trace_id;
    this.spanIds[i] = span.span_id;
    this.invocationIds[i] = span.invocation_id;
    this.parents[i] = span.parent_span_id ?? '';
    const caller = span.caller_worker_id === null ? null : { id: span.caller_worker_id, name: span.caller_worker_name };
    this.fill(i, span.function_id, caller, { id: span.callee_worker_id, name: span.callee_worker_name }, span.start_ms, span.duration_ms, span.status, span.error);
  }

  private slot(): number {
    const i = this.next;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    if (this.count < this.capacity) this.count++;
    // The span overwritten here (if any) gives up its error's share. No branch: the ring's first
    // wrap, at the capacity-th call of every engine, must not reach code V8 has no feedback for.
    this.errorChars -= this.errorSizes[i]!;
    this.errorSizes[i] = 0;
    return i;
  }

  /** The error span `i` keeps: its code and message only (not a stack or other fields), cut to maxValue. */
  private keep(i: number, error: { code: string; message: string }): { code: string; message: string } {
    const kept = { code: head(String(error.code), 256), message: cutString(String(error.message), this.maxValue, 'error message') };
    const size = kept.code.length + kept.message.length;
    this.errorSizes[i] = size;
    this.errorChars += size;
    if (this.errorChars > this.maxBytes) this.dropOldest();
    return kept;
  }

  /** Over maxBytes: the oldest spans go, not the one being recorded. */
  private dropOldest(): void {
    const n = this.capacity;
    while (this.errorChars > this.maxBytes && this.count > 1) {
      const oldest = (this.next - this.count + n) % n;
      this.errorChars -= this.errorSizes[oldest]!;
      this.errorSizes[oldest] = 0;
      this.errors[oldest] = null;
      this.count--;
    }
  }

  private fill(
    i: number,
    functionId: string,
    caller: { id: string; name: string } | null,
    callee: { id: string; name: string },
    start: number,
    duration: number,
    status: SpanStatus,
    error: { code: string; message: string } | null,
  ): void {
    this.functionIds[i] = functionId;
    this.callerIds[i] = caller ? caller.id : null;
    this.callerNames[i] = caller ? caller.name : 'engine';
    this.calleeIds[i] = callee.id;
    this.calleeNames[i] = callee.name;
    this.starts[i] = start;
    this.durations[i] = duration;
    this.statuses[i] = STATUS_INDEX[status];
    this.errors[i] = error === null ? null : this.keep(i, error);
  }

  private traceIdAt(i: number): string {
    return this.traceIds[i] || this.ids.traceId(this.no[i]!);
  }

  private spanAt(i: number): Span {
    const no = this.no[i]!;
    const error = this.errors[i]!;
    return {
      trace_id: this.traceIdAt(i),
      span_id: no ? this.ids.spanId(no) : this.spanIds[i]!,
      parent_span_id: this.parents[i] || null,
      function_id: this.functionIds[i]!,
      invocation_id: no ? this.ids.invocationId(no) : this.invocationIds[i]!,
      caller_worker_id: this.callerIds[i]!,
      caller_worker_name: this.callerNames[i]!,
      callee_worker_id: this.calleeIds[i]!,
      callee_worker_name: this.calleeNames[i]!,
      start_ms: this.starts[i]!,
      duration_ms: this.durations[i]!,
      status: STATUSES[this.statuses[i]!]!,
      error: error ? { code: error.code, message: error.message } : null,
    };
  }

  /** Slots newest first. */
  private *newest(): Generator<number> {
    const n = this.capacity;
    for (let k = 1; k <= this.count; k++) yield (this.next - k + n) % n;
  }

  /** Most recent first (by the latest span recorded), with their root span. */
  list(q: { limit?: number; function_id?: string; worker?: string; errors_only?: boolean } = {}): TraceSummary[] {
    const limit = q.limit ?? 100;
    const groups = new Map<string, Span[]>();
    for (const i of this.newest()) {
      const s = this.spanAt(i);
      const g = groups.get(s.trace_id);
      if (g) g.push(s);
      else groups.set(s.trace_id, [s]);
    }
    const out: TraceSummary[] = [];
    for (const [id, spans] of groups) {
      if (out.length >= limit) break;
      if (q.function_id && !spans.some((s) => s.function_id === q.function_id)) continue;
      if (q.worker && !spans.some((s) => s.callee_worker_name === q.worker || s.caller_worker_name === q.worker)) continue;
      if (q.errors_only && !spans.some((s) => s.status !== 'ok')) continue;
      out.push(summarize(id, spans));
    }
    return out;
  }

  /** The spans of one trace, parents before their children, siblings by start; or null. */
  get(traceId: string): { trace_id: string; spans: SpanView[] } | null {
    const spans: Span[] = [];
    for (const i of this.newest()) if (this.traceIdAt(i) === traceId) spans.push(this.spanAt(i));
    if (spans.length === 0) return null;
    return { trace_id: traceId, spans: orderSpans(spans) };
  }
}

/** A span as `engine::traces::get` returns it: plus its ISO start and its depth in the call tree. */
export type SpanView = Span & { start: string; depth: number };

/** Depth-first from the roots, children by start: the order of a waterfall. */
function orderSpans(spans: Span[]): SpanView[] {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string | null, Span[]>();
  for (const s of spans) {
    const parent = s.parent_span_id && ids.has(s.parent_span_id) ? s.parent_span_id : null;
    const list = children.get(parent);
    if (list) list.push(s);
    else children.set(parent, [s]);
  }
  for (const list of children.values()) list.sort((a, b) => a.start_ms - b.start_ms);
  const out: SpanView[] = [];
  const walk = (parent: string | null, depth: number): void => {
    for (const s of children.get(parent) ?? []) {
      out.push({ ...s, start: new Date(s.start_ms).toISOString(), depth });
      walk(s.span_id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

function summarize(traceId: string, spans: Span[]): TraceSummary {
  let root = spans[0]!;
  const ids = new Set(spans.map((s) => s.span_id));
  let start = Infinity;
  let end = -Infinity;
  let errors = 0;
  const workers = new Set<string>();
  for (const s of spans) {
    if (s.start_ms < start) start = s.start_ms;
    if (s.start_ms + s.duration_ms > end) end = s.start_ms + s.duration_ms;
    if (s.status !== 'ok') errors++;
    workers.add(s.callee_worker_name);
    const isRoot = !s.parent_span_id || !ids.has(s.parent_span_id);
    const rootIsRoot = !root.parent_span_id || !ids.has(root.parent_span_id);
    if ((isRoot && !rootIsRoot) || (isRoot === rootIsRoot && s.start_ms < root.start_ms)) root = s;
  }
  return {
    trace_id: traceId,
    root: {
      function_id: root.function_id,
      caller_worker_name: root.caller_worker_name,
      callee_worker_name: root.callee_worker_name,
      status: root.status,
      duration_ms: root.duration_ms,
    },
    start: new Date(start).toISOString(),
    duration_ms: Math.max(0, end - start),
    span_count: spans.length,
    error_count: errors,
    workers: [...workers],
  };
}
