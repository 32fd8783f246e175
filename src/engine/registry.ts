import { DEFAULT_NAMESPACE, type RegisterFunctionMsg } from 'svc-sdk/protocol';
import type { Peer } from './peer.js';
import { canonical, RESERVED_WORKER_NAMES } from './worker-names.js';

/**
 * A function the engine answers itself (`engine::*`). `caller` is null for engine-internal calls.
 * `frameChars`: the length of the frame that carried the call (0 when it came in no frame), an
 * upper bound of the size of anything in `data`.
 */
export type BuiltinHandler = (data: unknown, caller: Peer | null, frameChars: number) => unknown;

export interface FunctionEntry {
  id: string;
  /** The namespace it is registered in (iii 0.23+): its providers' (Peer.namespace). */
  namespace: string;
  /**
   * The engine's own: a builtin, or served by one of the engine's built-in workers (svc-state,
   * svc-http, …). Found from every namespace, as iii's engine-owned functions are.
   */
  engineOwned: boolean;
  /** JSON.stringify(id), made once: every routed call writes it into two frames. */
  idJson: string;
  description?: string;
  request_format?: unknown;
  response_format?: unknown;
  metadata?: Record<string, unknown>;
  /** Live workers serving this id: replicas. Empty for builtins. */
  providers: Peer[];
  builtin?: BuiltinHandler;
  /**
   * A builtin that runs as its frame is handled, not on the next microtask: what it changes
   * (engine::workers::register's namespace) holds for the frames that came after it in one read.
   */
  inOrder?: boolean;
  /** Round-robin cursor among providers with equal load. */
  cursor: number;
  /** The worker names already told of as sharing this id (Registry.onSharedId), once each. */
  toldNames?: Set<string>;
}

/** A peer that has not said its name (engine::workers::register) is not counted as another worker. */
const unnamed = (p: Peer): boolean => p.name.startsWith('anonymous-');

/**
 * Function ids and who serves them, per namespace. Several peers registering one id in one
 * namespace are replicas; the id stays callable until its last provider leaves.
 *
 * The `default` namespace has its map of its own, so that a call that names none (every call of an
 * iii 0.22 client and of svc's SDKs by default) costs one map lookup, as before namespaces.
 */
export class Registry {
  private readonly functions = new Map<string, FunctionEntry>();
  /** The other namespaces, each while it has a function. */
  private readonly spaces = new Map<string, Map<string, FunctionEntry>>();
  private readonly listeners = new Set<() => void>();
  /**
   * Told when an id becomes served by workers of more than one name (`names`, sorted): replicas of
   * one worker share an id by design, two different workers almost always by mistake (a copied id),
   * and their calls would be shared in silence. Once per id and name: not again when one of them
   * reconnects, again when a further name joins.
   */
  onSharedId: ((entry: FunctionEntry, names: string[]) => void) | null = null;

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  private changed(): void {
    for (const l of this.listeners) l();
  }

  addBuiltin(id: string, description: string, handler: BuiltinHandler, inOrder = false): void {
    this.functions.set(id, { id, namespace: DEFAULT_NAMESPACE, engineOwned: true, idJson: JSON.stringify(id), description, providers: [], builtin: handler, cursor: 0, ...(inOrder ? { inOrder } : {}) });
  }

  private space(namespace: string, create: boolean): Map<string, FunctionEntry> | undefined {
    if (namespace === DEFAULT_NAMESPACE) return this.functions;
    let m = this.spaces.get(namespace);
    if (!m && create) this.spaces.set(namespace, (m = new Map()));
    return m;
  }

  /**
   * Returns false when the id belongs to a builtin and cannot be served by a worker. The function
   * goes in the peer's namespace.
   */
  add(peer: Peer, msg: RegisterFunctionMsg): boolean {
    if (this.functions.get(msg.id)?.builtin) return false;
    const space = this.space(peer.namespace, true)!;
    let entry = space.get(msg.id);
    if (!entry) {
      const engineOwned = peer.node === undefined && RESERVED_WORKER_NAMES.includes(canonical(peer.name));
      entry = { id: msg.id, namespace: peer.namespace, engineOwned, idJson: JSON.stringify(msg.id), providers: [], cursor: 0 };
      space.set(msg.id, entry);
    }
    // The latest registration describes the function (a redeployed worker may change it).
    if (msg.description != null) entry.description = msg.description;
    if (msg.request_format !== undefined) entry.request_format = msg.request_format;
    if (msg.response_format !== undefined) entry.response_format = msg.response_format;
    if (msg.metadata !== undefined) entry.metadata = msg.metadata;
    if (!entry.providers.includes(peer)) entry.providers.push(peer);
    peer.functions.add(msg.id);
    this.noteNames(entry);
    this.changed();
    return true;
  }

  /**
   * `peer` has said its name: its functions may now be shared with workers of other names (an
   * iii-sdk program registers its functions before it names itself).
   */
  named(peer: Peer): void {
    const space = this.space(peer.namespace, false);
    for (const id of peer.functions) {
      const entry = space?.get(id);
      if (entry) this.noteNames(entry);
    }
  }

  private noteNames(entry: FunctionEntry): void {
    if (!this.onSharedId || entry.providers.length < 2) return;
    const names = [...new Set(entry.providers.filter((p) => !unnamed(p)).map((p) => p.name))].sort();
    if (names.length < 2) return;
    const told = (entry.toldNames ??= new Set());
    if (names.every((n) => told.has(n))) return;
    for (const n of names) told.add(n);
    this.onSharedId(entry, names);
  }

  remove(peer: Peer, id: string): void {
    peer.functions.delete(id);
    const space = this.space(peer.namespace, false);
    const entry = space?.get(id);
    if (!space || !entry || entry.builtin) return;
    const i = entry.providers.indexOf(peer);
    if (i < 0) return;
    entry.providers.splice(i, 1);
    if (entry.providers.length === 0) {
      space.delete(id);
      if (space.size === 0 && space !== this.functions) this.spaces.delete(peer.namespace);
    }
    this.changed();
  }

  removeAll(peer: Peer): void {
    for (const id of [...peer.functions]) this.remove(peer, id);
  }

  /**
   * A peer moves to another namespace (engine::workers::register named one after it registered
   * functions): its functions move with it, as they were described, but for those `refused` there.
   */
  move(peer: Peer, namespace: string, refused: (id: string) => boolean): void {
    const ids = [...peer.functions];
    const described = ids.map((id) => this.space(peer.namespace, false)?.get(id));
    this.removeAll(peer);
    peer.namespace = namespace;
    ids.forEach((id, i) => {
      if (refused(id)) return;
      const e = described[i];
      this.add(peer, { type: 'registerfunction', id, description: e?.description, request_format: e?.request_format, response_format: e?.response_format, metadata: e?.metadata });
    });
  }

  /** `id` in the default namespace (the engine's own functions are there). */
  get(id: string): FunctionEntry | undefined {
    return this.functions.get(id);
  }

  /**
   * `id` as a call in `namespace` finds it: in that namespace, else the engine's own (builtins and
   * its built-in workers' functions, registered in `default`). Absent or `default`: one lookup.
   */
  resolve(id: string, namespace: string | null | undefined): FunctionEntry | undefined {
    if (namespace == null || namespace === DEFAULT_NAMESPACE) return this.functions.get(id);
    const found = this.spaces.get(namespace)?.get(id);
    if (found) return found;
    const own = this.functions.get(id);
    return own?.engineOwned ? own : undefined;
  }

  /** The namespaces `id` is registered in (for the message of a call that did not find it). */
  namespacesOf(id: string): string[] {
    const found: string[] = this.functions.has(id) ? [DEFAULT_NAMESPACE] : [];
    for (const [ns, space] of this.spaces) if (space.has(id)) found.push(ns);
    return found;
  }

  /** `id` in `namespace` (default: `default`), for listings. */
  lookup(id: string, namespace: string = DEFAULT_NAMESPACE): FunctionEntry | undefined {
    return this.space(namespace, false)?.get(id);
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

  /** Functions registered, in every namespace, the engine's own (engine::*) included. */
  get size(): number {
    let n = this.functions.size;
    for (const space of this.spaces.values()) n += space.size;
    return n;
  }

  /** Every function, in every namespace (`default` first). */
  list(): FunctionEntry[] {
    const all = [...this.functions.values()];
    for (const space of this.spaces.values()) all.push(...space.values());
    return all;
  }
}
