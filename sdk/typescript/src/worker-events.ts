import type { InvocationError } from './errors.js';

/**
 * A worker's lifecycle, one state at a time:
 *
 *   disconnected ─start()─▶ connecting ─engine accepts (workerregistered)─▶ connected
 *        ▲                      │  ▲                                          │
 *        └──── socket lost ─────┘  └──── reconnect (backoff) ◀── disconnected ◀┘ socket lost
 *
 *   connected ─shutdown()─▶ draining ─handlers idle, grace over, or socket lost─▶ closed
 *   any other ─shutdown()─▶ closed;  any ─refused for good (stale_worker)─▶ closed
 *
 * - `disconnected`: not connected; after a loss a reconnect is scheduled (also the state of a
 *   Worker made with `new Worker()` before `start()`).
 * - `connecting`: a socket is being opened, or is open but the engine has not accepted it yet (a
 *   refused token never gets further).
 * - `connected`: the engine accepted the connection; functions, trigger types and triggers are
 *   registered again on every new connection.
 * - `draining`: `shutdown()` began: incoming calls are refused with `shutting_down`, handlers
 *   already running finish and answer, and their nested calls still work.
 * - `closed`: shut down, or refused for good; never reconnects. `worker.refusal` says why when the
 *   engine refused it.
 */
export type WorkerState = 'disconnected' | 'connecting' | 'connected' | 'draining' | 'closed';

/** The name this type had before the worker's lifecycle had `draining`; the same union. */
export type ConnectionState = WorkerState;

/** The state changed. */
export interface StateEvent {
  type: 'state';
  state: WorkerState;
  previous: WorkerState;
}
/** The engine at `url` accepted the connection and named it `workerId`. */
export interface ConnectedEvent {
  type: 'connected';
  url: string;
  workerId: string;
}
/** The socket to `url` closed (`code` 1006: lost without a close frame); calls in flight failed with `connection_lost`. */
export interface DisconnectedEvent {
  type: 'disconnected';
  url: string;
  code: number;
  reason: string;
}
/**
 * The engine at `url` refused the connection: `unauthorized` (close 4401: no token, or an unknown
 * one; the worker keeps retrying at the backoff's cap) or `stale_worker` (close 4410: another engine
 * run's secret; `final`, the worker is closed). Also reported as an `error` event.
 */
export interface RefusedEvent {
  type: 'refused';
  url: string;
  error: InvocationError;
  final: boolean;
}
/** A problem nobody awaits (a trigger refused on a replay, an `error` frame of the engine). */
export interface ErrorEvent {
  type: 'error';
  error: InvocationError;
}

/**
 * Everything a worker reports, as one union to switch on (as nats.js's status stream is): every
 * event is emitted under its own name and, as this union, under `event`:
 *
 *   for await (const [e] of on(worker, 'event')) if (e.type === 'refused') …   // node:events `on`
 */
export type WorkerEvent = StateEvent | ConnectedEvent | DisconnectedEvent | RefusedEvent | ErrorEvent;

/** The Worker's events and their listeners' arguments (`worker.on(name, listener)`, typed). */
export interface WorkerEventMap {
  state: [state: WorkerState, previous: WorkerState];
  connected: [event: ConnectedEvent];
  disconnected: [event: DisconnectedEvent];
  refused: [event: RefusedEvent];
  /** With no listener, the message is written to stderr instead. */
  error: [error: InvocationError];
  event: [event: WorkerEvent];
}
