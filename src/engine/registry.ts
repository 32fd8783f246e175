import type { RegisterFunctionMsg } from 'svc-sdk/protocol';
import type { Peer } from './peer.js';

/**
 * A function the engine answers itself (`engine::*`). `caller` is null for engine-internal calls.
 * `frameChars`: the length of the frame that carried the call (0 when it came in no frame), an
 * upper bound of the size of anything in `data`.
 */
export type BuiltinHandler = (data: unknown, caller: Peer | null, frameChars: number) => unknown;

export interface FunctionEntry {
  id: string;
  /** JSON.stringify(id), made once: every routed call writes it into two frames. */
  idJson: string;
  description?: string;
  request_format?: unknown;
  response_format?: unknown;
  metadata?: Record<string, unknown>;
  /** Live workers serving this id: replicas. Empty for builtins. */
  providers: Peer[];
  builtin?: BuiltinHandler;
  /** Round-robin cursor among providers with equal load. */
  cursor: number;
}

/**
 * Function ids and who serves them. Several peers registering one id are replicas; the id stays
 * callable until its last provider leaves.
 */
export class Registry {
  private readonly functions = new Map<string, FunctionEntry>();
  private readonly listeners = new Set<() => void>();

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  private changed(): void {
    for (const l of this.listeners) l();
  }

  addBuiltin(id: string, description: string, handler: BuiltinHandler): void {
    this.functions.set(id, { id, idJson: JSON.stringify(id), description, providers: [], builtin: handler, cursor: 0 });
  }

  /** Returns false when the id belongs to a builtin and cannot be served by a worker. */
  add(peer: Peer, msg: RegisterFunctionMsg): boolean {
    let entry = this.functions.get(msg.id);
    if (entry?.builtin) return false;
    if (!entry) {
      entry = { id: msg.id, idJson: JSON.stringify(msg.id), providers: [], cursor: 0 };
      this.functions.set(msg.id, entry);
    }
    // The latest registration describes the function (a redeployed worker may change it).
    if (msg.description != null) entry.description = msg.description;
    if (msg.request_format !== undefined) entry.request_format = msg.request_format;
    if (msg.response_format !== undefined) entry.response_format = msg.response_format;
    if (msg.metadata !== undefined) entry.metadata = msg.metadata;
    if (!entry.providers.includes(peer)) entry.providers.push(peer);
    peer.functions.add(msg.id);
    this.changed();
    return true;
  }

  remove(peer: Peer, id: string): void {
    peer.functions.delete(id);
    const entry = this.functions.get(id);
    if (!entry || entry.builtin) return;
    const i = entry.providers.indexOf(peer);
    if (i < 0) return;
    entry.providers.splice(i, 1);
    if (entry.providers.length === 0) this.functions.delete(id);
    this.changed();
  }

  removeAll(peer: Peer): void {
    for (const id of [...peer.functions]) this.remove(peer, id);
  }

  get(id: string): FunctionEntry | undefined {
    return this.functions.get(id);
  }

  /**
   * Least in-flight first; among equals, round-robin from a moving cursor so that equal replicas
   * take turns instead of the first one taking everything at low load.
   *
   * Cluster mode: other engines appear as providers too (RemotePeers: `node` set). A provider on
   * this engine always wins over another engine; `localOnly` (a call another engine forwarded)
   * excludes other engines, so a call is never forwarded twice.
   */
  pick(entry: FunctionEntry, localOnly = false): Peer | undefined {
    const p = entry.providers;
    const n = p.length;
    if (n === 0) return undefined;
    if (n === 1) return p[0]!.open && !(localOnly && p[0]!.node !== undefined) ? p[0] : undefined;
    let best: Peer | undefined;
    let bestIdx = 0;
    for (let k = 0; k < n; k++) {
      const idx = (entry.cursor + k) % n;
      const s = p[idx]!;
      if (!s.open) continue;
      const remote = s.node !== undefined;
      if (remote && localOnly) continue;
      if (!best || (best.node !== undefined && !remote) || (remote === (best.node !== undefined) && s.incoming.size < best.incoming.size)) {
        best = s;
        bestIdx = idx;
      }
    }
    entry.cursor = (bestIdx + 1) % n;
    return best;
  }

  /** Function ids registered, the engine's own (engine::*) included. */
  get size(): number {
    return this.functions.size;
  }

  list(): FunctionEntry[] {
    return [...this.functions.values()];
  }
}
