import { cutString, head } from '../budgets.js';
import { IdGenerator } from '../ids.js';
import { adoptIiiParents, listTraces, traceOf, type Span, type SpanError, type SpanSource, type SpanStatus, type SpanView, type TraceQuery, type TraceSummary } from '../traces.js';

const STATUSES: readonly SpanStatus[] = ['ok', 'error', 'timeout', 'stopped', 'cancelled'];
const STATUS_INDEX: Record<SpanStatus, number> = { ok: 0, error: 1, timeout: 2, stopped: 3, cancelled: 4 };
/** performance.timeOrigin is a getter; read it once. */
const TIME_ORIGIN = performance.timeOrigin;

/**
 * The most recent spans, in a ring of `capacity`, stored column-wise. Recording one happens on every
 * routed call, so it must not allocate: the ring holds numbers (ids, times, status) and references
 * to strings that live on anyway (function ids from the registry, worker names). A span object per
 * call, kept until the ring wraps, survives young-generation collections and is promoted: it costs
 * promotion and old-space marking on every call (README.md in this directory). Span objects are made only when
 * someone asks: `engine::traces::list`/`get` scan the ring (about a millisecond for 20 000 spans).
 * When the ring wraps, the oldest spans go first, so an old trace can lose its earliest spans
 * before its latest. The one part of a span of any size, its error, is kept as a copy of its code,
 * message and stack trace (a string `stacktrace`, as both SDKs send), each cut to `maxValue`
 * characters, and all kept errors together stay within `maxBytes`: beyond it the oldest spans go
 * early. Only a failed call's span has an error, so a successful call does none of this.
 */
export class SpanRing {
  readonly capacity: number;
  private next = 0;
  private count = 0;
  /** Spans recorded since the start: the position of the next one (the OTLP export reads from a position of its own). */
  private total = 0;
  private epoch: number;
  // One entry per slot. An id number of 0 means the matching string column holds the id itself.
  private readonly idNumbers: Float64Array;
  private readonly traceIds: string[];
  private readonly spanIds: string[];
  private readonly invocationIds: string[];
  private readonly parents: string[];
  /** SpanSource.declaredParentSpanId ('' when the caller's parent was taken as it came). */
  private readonly declaredParents: string[];
  private readonly functionIds: string[];
  private readonly callerIds: (string | null)[];
  private readonly callerNames: string[];
  private readonly calleeIds: string[];
  private readonly calleeNames: string[];
  private readonly starts: Float64Array;
  private readonly durations: Float64Array;
  private readonly statuses: Uint8Array;
  private readonly errors: (SpanError | null)[];
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
    this.idNumbers = new Float64Array(n);
    this.starts = new Float64Array(n);
    this.durations = new Float64Array(n);
    this.statuses = new Uint8Array(n);
    this.errorSizes = new Float64Array(n);
    const strings = (): string[] => new Array<string>(n).fill('');
    this.traceIds = strings();
    this.spanIds = strings();
    this.invocationIds = strings();
    this.parents = strings();
    this.declaredParents = strings();
    this.functionIds = strings();
    this.callerIds = new Array<string | null>(n).fill(null);
    this.callerNames = strings();
    this.calleeIds = strings();
    this.calleeNames = strings();
    this.errors = new Array<SpanError | null>(n).fill(null);
  }

  get spanCount(): number {
    return this.count;
  }

  /** The position the next span will have (spans recorded so far). */
  get recorded(): number {
    return this.total;
  }

  /**
   * Up to `max` spans from position `from` on, oldest first, and the position after them; spans the
   * ring no longer holds (overwritten since, or recorded before a counter wrap) are `missed`.
   */
  readFrom(from: number, max: number): { items: Span[]; next: number; missed: number } {
    const oldest = this.total - this.count;
    const start = Math.max(from, oldest);
    const end = Math.min(this.total, start + max);
    const spans: Span[] = [];
    const n = this.capacity;
    for (let p = start; p < end; p++) spans.push(this.spanAt((this.next - (this.total - p) + n * 2) % n));
    return { items: spans, next: end, missed: Math.max(0, start - from) };
  }

  /** Characters of the span errors held. */
  get heldBytes(): number {
    return this.errorChars;
  }

  /** The span of a call that ended now. */
  record(src: SpanSource, status: SpanStatus, error: SpanError | undefined): void {
    if (this.ids.epoch !== this.epoch) {
      // The id counter wrapped (after 2^48 calls): numbers in the ring no longer render correctly.
      this.epoch = this.ids.epoch;
      this.count = 0;
    }
    const i = this.slot();
    this.idNumbers[i] = src.idNumber;
    this.traceIds[i] = src.traceId;
    this.spanIds[i] = '';
    this.invocationIds[i] = '';
    this.parents[i] = src.parentSpanId;
    this.declaredParents[i] = src.declaredParentSpanId;
    this.fill(i, src.functionId, src.caller, src.callee, TIME_ORIGIN + src.startedAt, performance.now() - src.startedAt, status, error ?? null);
  }

  /** A span given whole (tests, tools). */
  add(span: Span): void {
    const i = this.slot();
    this.idNumbers[i] = 0;
    this.traceIds[i] = span.trace_id;
    this.spanIds[i] = span.span_id;
    this.invocationIds[i] = span.invocation_id;
    this.parents[i] = span.parent_span_id ?? '';
    this.declaredParents[i] = '';
    const caller = span.caller_worker_id === null ? null : { id: span.caller_worker_id, name: span.caller_worker_name };
    this.fill(i, span.function_id, caller, { id: span.callee_worker_id, name: span.callee_worker_name }, span.start_ms, span.duration_ms, span.status, span.error);
  }

  private slot(): number {
    const i = this.next;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    this.total++;
    if (this.count < this.capacity) this.count++;
    // The span overwritten here (if any) gives up its error's share. No branch: the ring's first
    // wrap, at the capacity-th call of every engine, must not reach code V8 has no feedback for.
    this.errorChars -= this.errorSizes[i]!;
    this.errorSizes[i] = 0;
    return i;
  }

  /**
   * The error span `i` keeps: its code, message and a string stack trace (no other fields), each cut
   * to maxValue. Runs for failed calls only.
   */
  private keep(i: number, error: SpanError): SpanError {
    const kept: SpanError = { code: head(String(error.code), 256), message: cutString(String(error.message), this.maxValue, 'error message') };
    let size = kept.code.length + kept.message.length;
    // The protocol's decoder checks code and message only; a stack trace that is not a string is not kept.
    const stack: unknown = error.stacktrace;
    if (typeof stack === 'string' && stack.length > 0) {
      kept.stacktrace = cutString(stack, this.maxValue, 'error stacktrace');
      size += kept.stacktrace.length;
    }
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
    error: SpanError | null,
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
    return this.traceIds[i] || this.ids.traceId(this.idNumbers[i]!);
  }

  private spanAt(i: number): Span {
    const idNumber = this.idNumbers[i]!;
    const error = this.errors[i]!;
    return {
      trace_id: this.traceIdAt(i),
      span_id: idNumber ? this.ids.spanId(idNumber) : this.spanIds[i]!,
      parent_span_id: this.parents[i] || null,
      function_id: this.functionIds[i]!,
      invocation_id: idNumber ? this.ids.invocationId(idNumber) : this.invocationIds[i]!,
      caller_worker_id: this.callerIds[i]!,
      caller_worker_name: this.callerNames[i]!,
      callee_worker_id: this.calleeIds[i]!,
      callee_worker_name: this.calleeNames[i]!,
      start_ms: this.starts[i]!,
      duration_ms: this.durations[i]!,
      status: STATUSES[this.statuses[i]!]!,
      error: error ? (error.stacktrace === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, stacktrace: error.stacktrace }) : null,
    };
  }

  /** Slots newest first. */
  private *newest(): Generator<number> {
    const n = this.capacity;
    for (let k = 1; k <= this.count; k++) yield (this.next - k + n) % n;
  }

  /** Most recent first (by the latest span recorded), with their root span (traces.ts). */
  list(q: TraceQuery = {}): TraceSummary[] {
    return listTraces(this.spans(), q);
  }

  /**
   * The spans of one trace, parents before their children, siblings by start; or null. Calls an iii
   * worker made are shown under its own spans when it sent them (traces.ts, adoptIiiParents).
   */
  get(traceId: string): { trace_id: string; spans: SpanView[] } | null {
    const spans: Span[] = [];
    const declared: string[] = [];
    for (const i of this.newest()) {
      if (this.traceIdAt(i) !== traceId) continue;
      spans.push(this.spanAt(i));
      declared.push(this.declaredParents[i]!);
    }
    adoptIiiParents(spans, declared);
    return traceOf(traceId, spans);
  }

  /** Every span held, newest first. */
  private *spans(): Generator<Span> {
    for (const i of this.newest()) yield this.spanAt(i);
  }
}
