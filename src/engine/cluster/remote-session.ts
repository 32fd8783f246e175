import type WebSocket from 'ws';
import type { InvokeFunctionMsg, Message } from 'svc-sdk/protocol';
import { Session } from '../session.js';

/**
 * Another engine of the cluster, seen from this one as if it were one connected peer. The
 * registry lists it as a provider of the functions that engine's workers serve, the triggers
 * table as a provider of its trigger types, and calls that engine forwards to us come from it. So
 * the engine's own routing, deadlines, halting and trigger hand-over apply unchanged across
 * engines: every frame "sent" to it travels over the backplane, every frame it "sends" arrives
 * from the backplane through the router.
 */
export class RemoteSession extends Session {
  constructor(
    override readonly node: string,
    /** The process of that engine: a restart under the same node id is a different peer. */
    readonly incarnation: string,
    private readonly out: (node: string, msg: Message) => void,
  ) {
    // No socket: every method that would touch one is overridden below.
    super(null as unknown as WebSocket, `engine:${node}`);
    this.name = `engine ${node}`;
    // Engines understand every svc extension: cancel reaches the remote callee, ack the remote owner.
    this.features.add('cancel');
    this.features.add('ack');
  }

  /**
   * Until this time (epoch ms) the engine is presumed gone: a frame sent to it reached no
   * subscriber. Routing skips it meanwhile instead of failing call after call until its lease
   * lapses; any frame from it, or the time passing with its lease renewed, clears the suspicion.
   */
  suspectUntil = 0;

  override get open(): boolean {
    return !this.closed && (this.suspectUntil === 0 || Date.now() >= this.suspectUntil);
  }

  override send(msg: Message): void {
    if (this.closed) return;
    this.out(this.node, msg);
  }

  /**
   * A call for that engine to serve: its deadline travels with it (the call has just started, so
   * all of it is left). The calling engine's own timer stays the one that answers `timeout`; the
   * serving engine's, a little later, only guards against a lost cancel.
   */
  override sendCall(text: string, timeoutMs: number): void {
    if (this.closed) return;
    this.out(this.node, { ...(JSON.parse(text) as InvokeFunctionMsg), timeout_ms: timeoutMs + FORWARD_DEADLINE_SLACK_MS });
  }

  override sendText(text: string): void {
    this.send(JSON.parse(text) as Message);
  }

  override get buffered(): number {
    return 0;
  }

  override ping(): void {}
  override close(): void {}
  override terminate(): void {}
}

/** How much later than the caller's deadline the serving engine gives up on a forwarded call. */
export const FORWARD_DEADLINE_SLACK_MS = 1000;
