import type { ErrorBody } from 'svc-sdk/protocol';
import type { Call, CallOutcome } from './call.js';
import { engineErrors } from './errors.js';
import type { Observers } from './observers.js';
import type { Peer } from './peer.js';
import type { SpanStatus } from './traces.js';

/**
 * The ways a call ends other than with its callee's result (invocations.ts, complete): its result
 * could not be accepted (fail), its caller gave up (cancel), its deadline passed (expire), a side
 * left (halt), the engine shut down (haltAll). Each answers the caller where one still waits, closes
 * the books through Invocations, and tells a callee that understands `cancel` to stop.
 */

/** What ending a call needs of the books that hold it (Invocations). */
export interface CallBooks {
  /** Every call in flight, by its id number. */
  readonly calls: { get(idNumber: number): Call | undefined; values(): IterableIterator<Call> };
  readonly observers: Pick<Observers, 'dropOwner'>;
  /** The caller's answer: the engine's own reply, or the frame Invocations writes. */
  deliver(call: Call, outcome: CallOutcome): void;
  /** The call's books closed: deadline, tables, bytes in flight; its span recorded. */
  finish(call: Call, status: SpanStatus, error?: ErrorBody): void;
}

/** The callee's result frame could not be accepted (e.g. too large): the caller gets this error instead. */
export function failCall(books: CallBooks, from: Peer, invocationId: string, error: ErrorBody): void {
  const call = from.incomingCall(invocationId);
  if (call) end(books, call, 'error', error);
}

/** The caller gave up on its call (svc extension `cancel`). */
export function cancelCall(books: CallBooks, caller: Peer, callerInvocationId: string, reason: string): void {
  const call = caller.outgoing.get(callerInvocationId);
  if (!call) return;
  books.finish(call, 'cancelled');
  tellCancel(call, reason);
}

/** The deadline passed (Deadlines, svc-sdk's deadlines.ts): the caller gets `timeout`, the callee a cancel. */
export function expireCall(books: CallBooks, call: Call): void {
  if (books.calls.get(call.idNumber) !== call) return;
  end(books, call, 'timeout', engineErrors.timeout(call.functionId, call.timeoutMs));
  tellCancel(call, 'timeout');
}

/** A peer is gone: its callers learn at once, its callees are told to stop. */
export function haltPeerCalls(books: CallBooks, peer: Peer, why: string): void {
  books.observers.dropOwner(peer);
  for (const call of [...peer.incoming.values()]) end(books, call, 'stopped', engineErrors.invocationStopped(call.functionId, why));
  for (const call of [...peer.outgoing.values()]) {
    books.finish(call, 'cancelled');
    tellCancel(call, 'caller disconnected');
  }
}

/** End everything still in flight (after the shutdown grace period). */
export function haltAllCalls(books: CallBooks, error: ErrorBody): void {
  for (const call of [...books.calls.values()]) {
    end(books, call, 'stopped', error);
    tellCancel(call, error.message);
  }
}

/** A call ends before its result: its caller is answered with `error`, then its books are closed. */
function end(books: CallBooks, call: Call, status: SpanStatus, error: ErrorBody): void {
  try {
    books.deliver(call, { error });
  } finally {
    books.finish(call, status, error);
  }
}

function tellCancel(call: Call, reason: string): void {
  if (call.callee.features.has('cancel')) call.callee.send({ type: 'cancel', invocation_id: call.id, reason });
}
