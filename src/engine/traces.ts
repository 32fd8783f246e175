/**
 * Traces: every routed invocation is one span; spans that share a W3C trace id form one trace.
 * The engine mints the span of each call and forwards `traceparent` = 00-<trace>-<span>-<flags>
 * to the callee, so the calls the callee makes while serving it carry that span as their parent.
 * A call without a (valid) traceparent starts a new trace, so the first routed call of a chain
 * (an HTTP request through svc-http, a CLI call) is its root.
 *
 * This file: what a span and a trace are, and how `engine::traces::*` assemble them. Where spans are
 * kept: hot/span-ring.ts.
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
  error: SpanError | null;
}

/**
 * A failed span's error: the callee's code and message, and its stack trace when the callee sent
 * one (`invocationresult.error.stacktrace`: a JS stack, a Python traceback).
 */
export interface SpanError {
  code: string;
  message: string;
  stacktrace?: string;
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

/** A span as `engine::traces::get` returns it: plus its ISO start and its depth in the call tree. */
export type SpanView = Span & { start: string; depth: number };

/** What `engine::traces::list` filters by. */
export interface TraceQuery {
  limit?: number;
  function_id?: string;
  worker?: string;
  errors_only?: boolean;
}

/** What the engine knows of a call when it ends: the fields of a Call that make its span. */
export interface SpanSource {
  /** The number the call's ids were made from (IdGenerator.next). */
  idNumber: number;
  /** The trace id taken from the caller's traceparent; '' when the call started a trace (its id is made from `idNumber`). */
  traceId: string;
  parentSpanId: string;
  /**
   * When the engine chose the parent (iii-call-parent.ts, onlyServedCall: an iii worker names a span of
   * its own, or none): the parent the caller named, or NO_DECLARED_PARENT; else ''. The trace shows
   * the call under the worker's own span when the worker sent it (adoptIiiParents).
   */
  declaredParentSpanId: string;
  functionId: string;
  caller: { id: string; name: string } | null;
  callee: { id: string; name: string };
  /** performance.now() at dispatch. */
  startedAt: number;
}

/** declaredParentSpanId of a call whose caller named no parent (no traceparent). */
export const NO_DECLARED_PARENT = '-';

/**
 * Put the calls an iii worker made while serving one call under that worker's own span of it, when
 * the worker sent its spans (OTLP, otlp-spans-in.ts): the span the call named (npm iii-sdk, PyPI
 * 0.25), else, for a call that named none or one not in the trace (PyPI 0.22, 0.24), the one span
 * sent by a worker (no invocation id) under the same engine span, if exactly one. `declared[k]` is
 * spans[k]'s declaredParentSpanId. Changes `spans` in place.
 */
export function adoptIiiParents(spans: Span[], declared: readonly string[]): void {
  if (!declared.some((d) => d !== '')) return;
  const ids = new Set(spans.map((s) => s.span_id));
  // Engine span id → the worker spans under it (the id itself; '' when several).
  const ownSpanUnder = new Map<string, string>();
  for (const o of spans) {
    if (o.invocation_id !== '' || o.parent_span_id === null) continue;
    ownSpanUnder.set(o.parent_span_id, ownSpanUnder.has(o.parent_span_id) ? '' : o.span_id);
  }
  spans.forEach((s, k) => {
    const d = declared[k]!;
    if (d === '') return;
    const own = ids.has(d) ? d : s.parent_span_id === null ? undefined : ownSpanUnder.get(s.parent_span_id);
    if (own) s.parent_span_id = own;
  });
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Whether a traceparent's parent id names no span: it repeats the first 16 hex digits of the trace id.
 * A caller that starts a trace without a span of its own (svc-http for each request's call, the
 * console) sends one, so that it knows the trace id before the call (an error response names it)
 * while the call's span is the trace's root: a parent span nobody exports left trace UIs without a
 * root (Tempo: "root span not yet received"; Jaeger: "invalid parent span IDs"). A random span id
 * matches by chance once in 2^64; Zipkin's convention (a root's span id is the trace id's last 16
 * digits) does not match it.
 */
export function namesNoParent(traceId: string, parentId: string): boolean {
  return traceId.startsWith(parentId);
}

/** The trace id, parent span id and flags of a W3C traceparent, or null when it is not one. */
export function parseTraceparent(tp: string | undefined | null): { traceId: string; parentId: string; flags: string } | null {
  if (!tp || tp.length !== 55) return null;
  const m = TRACEPARENT.exec(tp);
  if (!m || m[1] === '00000000000000000000000000000000' || m[2] === '0000000000000000') return null;
  return { traceId: m[1]!, parentId: m[2]!, flags: m[3]! };
}

/**
 * The traces of `newestFirst` (spans, the most recently recorded first), most recent first (by
 * their latest span), each with its root span, filtered.
 */
export function listTraces(newestFirst: Iterable<Span>, q: TraceQuery = {}): TraceSummary[] {
  const limit = q.limit ?? 100;
  const groups = new Map<string, Span[]>();
  for (const s of newestFirst) {
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

/** One trace from its spans: parents before their children, siblings by start; null without spans. */
export function traceOf(traceId: string, spans: Span[]): { trace_id: string; spans: SpanView[] } | null {
  if (spans.length === 0) return null;
  return { trace_id: traceId, spans: orderSpans(spans) };
}

/**
 * Depth-first from the roots, children by start: the order of a waterfall. Span ids come from
 * peers too (iii workers' OTLP spans, otlp-spans-in.ts), so the tree is not trusted to be one: a
 * span may repeat another's id or name itself as parent, and a chain may be as deep as the ring.
 * So the walk is iterative, each id's children are listed once, and spans no root reaches (a
 * cycle) follow at depth 0: every span is shown exactly once.
 */
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
  const shown = new Set<Span>();
  const expanded = new Set<string>();
  const walk = (roots: readonly Span[]): void => {
    // The stack holds spans still to show, the next on top: siblings pushed in reverse.
    const stack: Array<{ span: Span; depth: number }> = [];
    for (let k = roots.length - 1; k >= 0; k--) stack.push({ span: roots[k]!, depth: 0 });
    while (stack.length > 0) {
      const { span, depth } = stack.pop()!;
      if (shown.has(span)) continue;
      shown.add(span);
      out.push({ ...span, start: new Date(span.start_ms).toISOString(), depth });
      if (expanded.has(span.span_id)) continue;
      expanded.add(span.span_id);
      const kids = children.get(span.span_id) ?? [];
      for (let k = kids.length - 1; k >= 0; k--) stack.push({ span: kids[k]!, depth: depth + 1 });
    }
  };
  walk(children.get(null) ?? []);
  if (shown.size < spans.length) walk(spans.filter((s) => !shown.has(s)).sort((a, b) => a.start_ms - b.start_ms));
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
