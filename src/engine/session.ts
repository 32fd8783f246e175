import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { ErrorBody, Feature, Message } from 'svc-sdk/protocol';
import { ChurnMap, sendCoalesced } from 'svc-sdk/internal';
import { OPEN_ACCESS, type Access } from './auth.js';
import type { RunIdentity } from './engine-run.js';
import type { Invocation } from './invocations.js';
import { counterOf } from './traces.js';

/**
 * One connected peer (a worker, the CLI, the console). Holds what the peer registered, so that all
 * of it can be removed when the peer goes, and the invocations it takes part in, so that none is
 * left waiting when it goes.
 */
export class Session {
  readonly id = randomUUID();
  readonly reattachToken = randomUUID();
  readonly connectedAt = Date.now();
  name: string;
  role: 'worker' | 'client' = 'worker';
  metadata: Record<string, unknown> = {};
  /** svc extensions granted in `hello`; empty for iii clients. */
  readonly features = new Set<Feature>();
  /** Answered the last ping (or sent anything) since the previous liveness tick. */
  alive = true;
  closed = false;
  /** What this connection's token allows. */
  access: Access = OPEN_ACCESS;
  /**
   * Who the run secret it presented says it is (src/engine/engine-run.ts): an instance this engine
   * run started, or one of its own clients. null: it presented none (iii SDKs, unsupervised workers).
   */
  identity: RunIdentity | null = null;
  /** Set only on cluster proxies (src/engine/cluster): the other engine this session stands for. */
  readonly node?: string;

  readonly functions = new Set<string>();
  readonly triggerTypes = new Set<string>();
  /** Binding ids this peer registered. */
  readonly triggers = new Set<string>();
  /**
   * Calls this peer is serving, by the number of their engine invocation id (IdGenerator): a
   * number key costs no string hash, and every result is looked up here. incomingCall() finds one
   * by its id.
   */
  readonly incoming = new ChurnMap<number, Invocation>();
  /** Calls this peer made and awaits, by the peer's own invocation id. */
  readonly outgoing = new ChurnMap<string, Invocation>();
  /** What this peer's registrations store, per key, in characters (budgets.ts StoredValues). */
  readonly stored = new Map<string, number>();
  storedBytes = 0;
  /** Since when (ms) its send buffer has been over the slow-consumer limit; 0: it is not. */
  slowSince = 0;

  constructor(
    private readonly ws: WebSocket,
    readonly ip: string,
  ) {
    this.name = `anonymous-${this.id.slice(0, 8)}`;
  }

  /** The call this peer serves under engine invocation id `id`, if any. */
  incomingCall(id: string): Invocation | undefined {
    const inv = this.incoming.get(counterOf(id));
    return inv !== undefined && inv.id === id ? inv : undefined;
  }

  get registrations(): number {
    return this.functions.size + this.triggers.size + this.triggerTypes.size;
  }

  /** Bytes written to this peer and not yet handed to the kernel (ws's bufferedAmount). */
  get buffered(): number {
    return this.ws.bufferedAmount;
  }

  get open(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  send(msg: Message): void {
    this.sendText(JSON.stringify(msg));
  }

  sendText(text: string): void {
    if (!this.open) return;
    sendCoalesced(this.ws, text);
  }

  /**
   * The `invokefunction` frame of a call this peer is to serve, with the call's deadline: a peer
   * that forwards the call on (a cluster proxy) needs it, and the call's books, where it is also
   * kept, are written only after this frame (invocations.ts).
   */
  sendCall(text: string, _timeoutMs: number): void {
    this.sendText(text);
  }

  sendError(error: ErrorBody, ref?: { type?: string; id?: string }): void {
    this.send({ type: 'error', error, ...(ref ? { ref } : {}) });
  }

  ping(): void {
    if (!this.open) return;
    try {
      this.ws.ping();
    } catch {
      /* closing already; the close handler cleans up */
    }
  }

  close(code: number, reason: string): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(code, reason);
  }

  terminate(): void {
    this.ws.terminate();
  }

  /** What `engine::workers::list` shows. */
  describe(): Record<string, unknown> {
    return {
      worker_id: this.id,
      name: this.name,
      role: this.role,
      runtime: this.metadata.runtime ?? 'unknown',
      version: this.metadata.version ?? null,
      pid: this.metadata.pid ?? null,
      os: this.metadata.os ?? null,
      ip: this.ip,
      status: this.open ? 'connected' : 'disconnected',
      connected_at: new Date(this.connectedAt).toISOString(),
      uptime_ms: Date.now() - this.connectedAt,
      functions: [...this.functions],
      trigger_types: [...this.triggerTypes],
      in_flight: this.incoming.size,
      features: [...this.features],
      token: this.access.token ? this.access.name : null,
      // Verified by its run secret, unlike `name` and `pid`, which the peer reports itself.
      supervised: this.identity?.kind === 'instance' ? { worker: this.identity.worker, replica: this.identity.replica } : null,
      metadata: this.metadata,
    };
  }
}
