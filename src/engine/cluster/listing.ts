import { SvcError } from 'svc-sdk';
import { EngineError } from '../errors.js';
import type { Registry } from '../registry.js';
import type { Cluster } from './cluster.js';

type Obj = Record<string, unknown>;

function obj(data: unknown): Obj {
  return typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Obj) : {};
}

/**
 * In cluster mode the listing builtins show the whole cluster: each wraps the engine's own
 * answer (src/engine/builtins.ts), marks local entries with this engine's node id, and replaces
 * or adds the entries of the other engines from their published snapshots.
 */
export function installClusterBuiltins(registry: Registry, cluster: Cluster): void {
  const wrap = (id: string, description: string, f: (local: (data: unknown) => Promise<unknown>, data: unknown) => unknown): void => {
    const original = registry.get(id)?.builtin;
    if (!original) throw new SvcError('internal_error', `The cluster listing wraps builtin ${id}, which is not installed`);
    registry.addBuiltin(id, description, (data, caller, frameChars) => f(async (d) => original(d, caller, frameChars), data));
  };
  const self = cluster.nodeId;

  const remoteWorkers = (): Obj[] => {
    const out: Obj[] = [];
    const now = Date.now();
    for (const node of cluster.nodes.values()) {
      for (const w of node.snapshot?.workers ?? []) {
        const since = Date.parse(String(w.connected_at));
        out.push({ ...w, uptime_ms: Number.isFinite(since) ? now - since : null, in_flight: null, engine: node.node });
      }
    }
    return out;
  };

  wrap('engine::workers::list', 'Connected workers of every engine of the cluster, with the engine of each', async (local, data) => {
    const r = obj(await local(data));
    const mine = (r.workers as Obj[]).map((w) => ({ ...w, engine: self }));
    return { workers: [...mine, ...remoteWorkers()] };
  });

  wrap('engine::workers::info', 'One worker of the cluster by worker_id or name', async (local, data) => {
    try {
      return { ...obj(await local(data)), engine: self };
    } catch (e) {
      if (!(e instanceof EngineError) || e.code !== 'worker_not_found') throw e;
      const m = obj(data);
      const key = m.worker_id ?? m.name;
      const w = remoteWorkers().find((x) => x.worker_id === key || x.name === key);
      if (!w) throw e;
      return w;
    }
  });

  /** A function's providers: other engines (their RemotePeers) expand into the workers there. */
  const expand = (f: Obj): Obj => {
    const workers: Obj[] = [];
    for (const w of (f.workers as Obj[] | undefined) ?? []) {
      const node = cluster.byPeerId.get(String(w.worker_id));
      if (!node) {
        workers.push({ ...w, engine: self });
        continue;
      }
      const remote = node.snapshot?.functions.find((x) => x.id === f.function_id);
      for (const rw of remote?.workers ?? []) workers.push({ ...rw, engine: node.node });
    }
    return { ...f, workers, engines: [...new Set(workers.map((w) => w.engine))] };
  };

  wrap('engine::functions::list', 'Functions of the whole cluster, with the workers (and their engines) serving each', async (local, data) => {
    const r = obj(await local(data));
    return { functions: (r.functions as Obj[]).map(expand) };
  });

  wrap('engine::functions::info', 'One function of the cluster by function_id', async (local, data) => expand(obj(await local(data))));

  registry.addBuiltin('engine::cluster::nodes', 'The engines of the cluster: node id, address, counts', () => ({
    node_id: self,
    lease_ms: cluster.leaseMs,
    nodes: [
      { node_id: self, self: true, url: cluster.address || null },
      ...[...cluster.nodes.values()].map((n) => ({
        node_id: n.node,
        self: false,
        url: n.url || null,
        functions: n.snapshot?.functions.length ?? 0,
        workers: n.snapshot?.workers.length ?? 0,
        joined_at: new Date(n.joinedAt).toISOString(),
      })),
    ],
  }));
}
