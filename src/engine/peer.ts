import { randomUUID } from 'node:crypto';
import { DEFAULT_NAMESPACE, type ErrorBody, type Feature, type Message } from 'svc-sdk/protocol';
import { OPEN_ACCESS, type Access } from './auth.js';
import type { Call } from './call.js';
import type { ClientBudget } from './client-budgets.js';
import type { RunIdentity } from './engine-run.js';
import { ChurnMap } from './hot/shared-with-sdk.js';
import { counterOf } from './ids.js';
import type { ProcessReport, ServiceCounters } from './worker-reports.js';

/**
 * The other side of a call or a registration, as the registry, the triggers table, the router and
 * the invocations see it. Two kinds:
 *
 * - Session (session.ts): a WebSocket connection to this engine (a worker, the CLI, the console).
 * - RemotePeer (cluster/remote-peer.ts): another engine of the cluster, standing for the workers
 *   connected there. Frames to it travel over the backplane; frames from it arrive from there.
 *
 * A peer holds what it registered, so that all of it can be removed when it goes, and the calls it
 * takes part in, so that none is left waiting when it goes. How a frame reaches it is its own
 * (sendText, sendCall); everything else the engine's tables keep here is the same for both kinds.
 */
export abstract class Peer {
  readonly id = randomUUID();
  name: string;
  role: 'worker' | 'client' = 'worker';
  metadata: Record<string, unknown> = {};
  /**
   * iii 0.23+: the namespace its functions are registered in (engine::workers::register's
   * `namespace`; `default` until it names one). Its calls name theirs themselves.
   */
  namespace = DEFAULT_NAMESPACE;
  /** svc extensions granted in `hello`; empty for iii clients. */
  readonly features = new Set<Feature>();
  /** Set once it is gone (its connection closed, or the other engine left): nothing more is sent. */
  closed = false;
  /** What it may do: its token's rights. Another engine's peer has them all: its calls were authorized there. */
  access: Access = OPEN_ACCESS;
  /**
   * Who the run secret it presented says it is (src/engine/engine-run.ts): an instance this engine
   * run started, or one of its own clients. null: it presented none (iii SDKs, unsupervised workers).
   */
  identity: RunIdentity | null = null;
  /** The node id of the other engine a RemotePeer stands for; undefined for a connection to this engine. */
  abstract readonly node: string | undefined;

  readonly functions = new Set<string>();
  readonly triggerTypes = new Set<string>();
  /** Binding ids this peer registered. */
  readonly triggers = new Set<string>();
  /**
   * Calls this peer is serving, by the number of their engine invocation id (ids.ts): a number key
   * costs no string hash, and every result is looked up here. incomingCall() finds one by its id.
   */
  readonly incoming = new ChurnMap<number, Call>();
  /** Calls this peer made and awaits, by the peer's own invocation id. */
  readonly outgoing = new ChurnMap<string, Call>();
  /** The bytes of the calls it made that are in flight, fire-and-forget ones too (engine.limits.max_in_flight_bytes_per_worker). */
  outgoingBytes = 0;
  /**
   * What its client (all connections of its token, instance or address: client-budgets.ts) has in
   * flight. null for another engine's peer: its calls were held to their client's budget there.
   */
  client: ClientBudget | null = null;
  /** What this peer's registrations store, per key, in characters (budgets.ts StoredValues). */
  readonly stored = new Map<string, number>();
  storedBytes = 0;
  /** Its latest `engine::workers::report` (worker-reports.ts); null until it sends one. */
  processReport: ProcessReport | null = null;
  /** The svc-state / svc-queue counters of that report (service-counters.ts); null: it sent none. */
  serviceCounters: ServiceCounters | null = null;

  /** `name`: what it is called until it says (engine::workers::register); default `anonymous-<id>`. */
  constructor(name?: string) {
    this.name = name ?? `anonymous-${this.id.slice(0, 8)}`;
  }

  /** Whether a frame sent now can reach it: routing skips a provider that is not open. */
  abstract get open(): boolean;

  /** Write one frame (JSON text) to it. Frames to a peer that is not open are dropped. */
  abstract sendText(text: string): void;

  /**
   * Write the `invokefunction` frame of `call`, which this peer is to serve. The call has just
   * started: its books (deadline, tables) are kept after this returns (invocations.ts, dispatch),
   * so a peer that passes the call on reads what it needs (the deadline) from `call` itself.
   */
  abstract sendCall(call: Call, frame: string): void;

  send(msg: Message): void {
    this.sendText(JSON.stringify(msg));
  }

  sendError(error: ErrorBody, ref?: { type?: string; id?: string }): void {
    this.send({ type: 'error', error, ...(ref ? { ref } : {}) });
  }

  /** The call this peer serves under engine invocation id `id`, if any. */
  incomingCall(id: string): Call | undefined {
    const call = this.incoming.get(counterOf(id));
    return call !== undefined && call.id === id ? call : undefined;
  }

  get registrations(): number {
    return this.functions.size + this.triggers.size + this.triggerTypes.size;
  }
}
