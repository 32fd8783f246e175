import { timeLeft, type Call } from '../call.js';
import { Peer } from '../peer.js';

/**
 * Another engine of the cluster, seen from this one as one peer. The registry lists it as a
 * provider of the functions that engine's workers serve, the triggers table as a provider of its
 * trigger types, and calls that engine forwards to us come from it. So the engine's own routing,
 * deadlines, halting and trigger hand-over apply unchanged across engines: every frame sent to it
 * travels over the backplane (`out`), every frame it sends arrives from the backplane through the
 * router (Router.onFrame).
 */
export class RemotePeer extends Peer {
  /**
   * Until this time (epoch ms) the engine is presumed gone: a frame sent to it reached no
   * subscriber. Routing skips it meanwhile instead of failing call after call until its lease
   * lapses; any frame from it, or the time passing with its lease renewed, clears the suspicion.
   */
  suspectUntil = 0;

  constructor(
    readonly node: string,
    /** The process of that engine: a restart under the same node id is a different peer. */
    readonly incarnation: string,
    /** Queues one frame (JSON text) for that engine (Backplane.send). */
    private readonly out: (node: string, frame: string) => void,
  ) {
    super(`engine ${node}`);
    // Engines understand every svc extension: cancel reaches the remote callee, ack the remote owner.
    this.features.add('cancel');
    this.features.add('ack');
  }

  get open(): boolean {
    return !this.closed && (this.suspectUntil === 0 || Date.now() >= this.suspectUntil);
  }

  sendText(text: string): void {
    if (this.closed) return;
    this.out(this.node, text);
  }

  /**
   * A call for that engine to serve, with its deadline: the time it has left (all of it: it has just
   * started), written last so that it is the one read. The calling engine's own timer stays the one
   * that answers `timeout`; the serving engine's, a little later, only guards against a lost cancel.
   */
  sendCall(call: Call, frame: string): void {
    this.sendText(frame.slice(0, -1) + ',"timeout_ms":' + (timeLeft(call) + FORWARD_DEADLINE_SLACK_MS) + '}');
  }
}

/** How much later than the caller's deadline the serving engine gives up on a forwarded call. */
export const FORWARD_DEADLINE_SLACK_MS = 1000;
