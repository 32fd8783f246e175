import type { ErrorBody } from 'svc-sdk/protocol';
import type { DeadlineEntry } from './hot/shared-with-sdk.js';
import type { Peer } from './peer.js';
import type { SpanSource } from './traces.js';

/**
 * One routed call, from dispatch to finish (invocations.ts): who asked (caller), who serves it
 * (callee), until when (timeoutMs from startedAt), its ids, and its place in a trace. It is made
 * before the callee's frame is written and handed to the callee with it (Peer.sendCall), so that a
 * peer which passes the call on (another engine) has the deadline and the rest from the call
 * itself; the engine's books (deadline lane, in-flight tables) are written just after.
 */
export interface Call extends SpanSource, DeadlineEntry {
  /** Minted by the engine and sent to the callee; callers' own ids never reach callees. */
  id: string;
  /** The number `id` is made of (ids.ts); the key of the in-flight tables. */
  idNumber: number;
  /** Who asked: null for a call the engine makes itself (its answer is `internal`). */
  caller: Peer | null;
  callee: Peer;
  /** The caller's invocation_id; undefined for fire-and-forget. */
  callerInvocationId: string | undefined;
  /** Its JSON, for the answer (made after the callee's frame is written). */
  callerIdJson: string | undefined;
  /** The answer path of a call the engine makes itself. */
  internal: Reply | undefined;
  /** The registry's id string (shared, so a span in the span ring does not keep a copy alive). */
  functionId: string;
  /**
   * What the caller asked for, as JSON text for its answer: differs from functionId when an
   * enqueue went to engine::queue::enqueue.
   */
  requestedIdJson: string;
  /** Set only while an observer watches its function (observers.ts). */
  observed: ObservedCall | undefined;
  /** Its deadline, counted from startedAt (performance.now() when it started). */
  timeoutMs: number;
  /** The trace it belongs to: '' when it started one (the trace id is then made from idNumber). */
  traceId: string;
  /** The caller's span ('' when it started a trace). */
  parentSpanId: string;
  /** Length of the frame sent to the callee and of the caller's id: in the bytes in flight until the call ends. */
  bytes: number;
}

/** How a call ended, as its caller is told. */
/** What the engine keeps of a call an observer watches (observers.ts), until it settles. */
export interface ObservedCall {
  input: unknown;
  startedAtMs: number;
  /** Observer activations that led to it (the caller's `observe_depth`). */
  depth: number;
  namespace: string;
}

export interface CallOutcome {
  result?: unknown;
  error?: ErrorBody;
  traceparent?: string | null;
  baggage?: string | null;
}

export type Reply = (outcome: CallOutcome) => void;

/** The rest of the time a call has (ms, at least 1); at dispatch, all of its timeoutMs. */
export function timeLeft(call: Call, now = performance.now()): number {
  return Math.max(1, Math.ceil(call.startedAt + call.timeoutMs - now));
}
