import type { Access } from './auth.js';
import type { RunIdentity } from './engine-run.js';

/**
 * What one client has in flight over all its connections (engine.limits.max_in_flight_per_client,
 * max_in_flight_bytes_per_client). The per-connection bounds alone let a client that opens several
 * connections take the whole engine: four connections at max_in_flight_bytes_per_worker fill
 * max_in_flight_bytes, ten at max_in_flight_per_worker fill max_in_flight_total, and every other
 * caller is then answered `overloaded`.
 *
 * A client is who the engine can tell apart, most certain first:
 * - an instance the engine supervises (proven by its run secret): each instance its own, so that
 *   the workers the engine starts, which share its minted token, do not share one budget;
 * - otherwise the token it presented (its name): a token holder is one party however many
 *   connections it opens;
 * - without tokens, its remote address. The engine then listens on loopback only, so every
 *   connection the engine did not start shares one budget: what it keeps apart is the supervised
 *   stack (svc-http, svc-queue, the workers of `svc worker add`) from whatever else runs locally.
 */
export interface ClientBudget {
  /** Says who it is in an `overloaded` message: `token "math"`, `instance svc-http#0`, `address 127.0.0.1`. */
  readonly label: string;
  /** Calls its connections made that are in flight, fire-and-forget ones too. */
  calls: number;
  /** Their bytes, counted as max_in_flight_bytes counts them. */
  bytes: number;
  /**
   * Its open connections. The budget goes when the last has left and its last call has ended: a
   * fire-and-forget call outlives the connection that made it, and a client that reconnects must
   * not find its share empty while those calls still run.
   */
  peers: number;
}

/** The budgets of the clients with a connection open, by who they are. */
export class ClientBudgets {
  private readonly byLabel = new Map<string, ClientBudget>();

  /** The budget a new connection shares with the other connections of its client. */
  join(access: Access, identity: RunIdentity | null, ip: string): ClientBudget {
    const label = clientLabel(access, identity, ip);
    let budget = this.byLabel.get(label);
    if (budget === undefined) {
      budget = { label, calls: 0, bytes: 0, peers: 0 };
      this.byLabel.set(label, budget);
    }
    budget.peers++;
    return budget;
  }

  /** A connection of its client closed (after the calls it awaited were ended). */
  leave(budget: ClientBudget): void {
    if (--budget.peers === 0 && budget.calls === 0) this.forget(budget);
  }

  /** The last call of a client with no connection left ended (Invocations.finish). */
  forget(budget: ClientBudget): void {
    if (this.byLabel.get(budget.label) === budget) this.byLabel.delete(budget.label);
  }

  get size(): number {
    return this.byLabel.size;
  }
}

function clientLabel(access: Access, identity: RunIdentity | null, ip: string): string {
  if (identity?.kind === 'instance') return `instance ${identity.worker}#${identity.replica}`;
  if (access.token) return `token ${JSON.stringify(access.token.name)}`;
  return `address ${ip}`;
}
