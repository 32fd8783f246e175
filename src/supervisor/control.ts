import { EngineError } from '../engine/errors.js';
import type { Engine } from '../engine/server.js';
import type { Session } from '../engine/session.js';
import type { Supervisor } from './supervisor.js';
import type { WorkerEntry } from './worker-entries.js';

function nameOf(data: unknown, fn: string): string {
  const n = (data as { name?: unknown } | null)?.name;
  if (typeof n !== 'string' || n.length === 0) throw new EngineError('invalid_payload', `${fn}: "name" must be a non-empty string`);
  return n;
}

/**
 * The connections of supervised worker `name`: those that proved to be its instances with the run
 * secret the supervisor gave them. A worker whose program cannot present one (written against the
 * iii SDK) has none; for it, connections that present no secret and bear its name stand in. A name
 * is what a peer says of itself, the secret is proof: a connection proven to be another worker, or
 * an unproven one while proven ones exist, never joins the row.
 */
export function connectionsOf(engine: Engine, name: string): Session[] {
  const proven: Session[] = [];
  const named: Session[] = [];
  for (const s of engine.connections()) {
    if (s.role === 'client') continue;
    if (s.identity?.kind === 'instance') {
      if (s.identity.worker === name) proven.push(s);
    } else if (s.identity === null && s.name === name) named.push(s);
  }
  return proven.length > 0 ? proven : named;
}

/**
 * `engine::supervisor::*`: how `svc worker add|list|remove|restart` reach the engine that runs the
 * workers. Management functions: issue #9 restricts them to admin tokens. `readEntries` reads
 * config.yaml's workers as the file says now (the CLI edits the file, the engine acts on it).
 */
export function installSupervisorFunctions(engine: Engine, sup: Supervisor, configFile: string, readEntries: () => WorkerEntry[]): void {
  const entryFromConfig = (name: string): WorkerEntry => {
    const entry = readEntries().find((e) => e.name === name);
    if (!entry) throw new EngineError('worker_not_found', `Worker ${name} is not listed in ${configFile}`);
    return entry;
  };
  const registry = engine.registry;
  registry.addBuiltin('engine::supervisor::list', 'Supervised workers: status, pids, restarts, and the connections and functions of their instances', () => ({
    workers: sup.list().map((w) => {
      const conns = connectionsOf(engine, String(w.name));
      return { ...w, connections: conns.length, functions: [...new Set(conns.flatMap((c) => [...c.functions]))].sort() };
    }),
  }));
  registry.addBuiltin('engine::supervisor::add', 'Start supervising a worker listed in config.yaml ({name, force?})', async (data) => {
    const name = nameOf(data, 'engine::supervisor::add');
    const force = (data as { force?: unknown }).force === true;
    const entry = entryFromConfig(name);
    const worker = sup.describe(force ? await sup.restart(entry, { force }) : await sup.start(entry));
    if (worker.status === 'failed') throw new EngineError('worker_start_failed', `Worker ${name} failed to start: ${String(worker.last_error)}`);
    return worker;
  });
  registry.addBuiltin('engine::supervisor::restart', 'Restart a supervised worker ({name, force?})', async (data) => {
    const name = nameOf(data, 'engine::supervisor::restart');
    const entry = entryFromConfig(name);
    const worker = sup.describe(await sup.restart(entry, { force: (data as { force?: unknown }).force === true }));
    if (worker.status === 'failed') throw new EngineError('worker_start_failed', `Worker ${name} failed to start: ${String(worker.last_error)}`);
    return worker;
  });
  registry.addBuiltin('engine::supervisor::remove', 'Stop supervising a worker and stop it ({name})', async (data) => {
    const name = nameOf(data, 'engine::supervisor::remove');
    return { removed: await sup.remove(name) };
  });
}
