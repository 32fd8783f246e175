import { EngineError } from '../engine/errors.js';
import type { Engine } from '../engine/server.js';
import type { Session } from '../engine/session.js';
import { processTotals } from '../engine/worker-reports.js';
import type { Supervisor } from './supervisor.js';
import { tellingLine } from './output-tail.js';
import { notListedMessage, type WorkerEntry } from './worker-entries.js';

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
 * The URLs the instances of a worker serve, as they registered them (svc-http: metadata.http.url,
 * the port it bound, which with `port: 0` is known nowhere else): svc worker add and svc status print them.
 */
export function urlsOf(conns: readonly Session[]): string[] {
  const urls = conns.flatMap((c) => {
    const url = (c.metadata.http as { url?: unknown } | undefined)?.url;
    return typeof url === 'string' ? [url] : [];
  });
  return [...new Set(urls)].sort();
}

/** Longest a caller may ask `engine::supervisor::add|restart` to wait for the worker to register. */
const MAX_WAIT_MS = 300_000;

function waitOf(data: unknown, fn: string): number {
  const w = (data as { wait_ms?: unknown } | null)?.wait_ms ?? 0;
  if (typeof w !== 'number' || !Number.isInteger(w) || w < 0 || w > MAX_WAIT_MS) throw new EngineError('invalid_payload', `${fn}: "wait_ms" must be an integer from 0 to ${MAX_WAIT_MS}, got ${JSON.stringify(w)}`);
  return w;
}

/**
 * A worker counts as started once its connections have stayed up this long with their
 * registrations unchanged: one whose registration is refused (a trigger config its provider or the
 * engine refuses) exits right after it connects, and that exit is the start failing, which
 * `svc worker add|restart` must report rather than "connected".
 */
const SETTLE_MS = 300;
/** ...or this long in all, for a worker that goes on registering things. */
const SETTLE_MAX_MS = 2_000;

/**
 * Wait until every instance of `name` is connected and settled (SETTLE_MS), or it exits, or `waitMs`
 * passes. An exit since `since` is the start failing: a worker_start_failed error naming how it
 * exited and its last line of output (the whole tail is in the row's last_exit). Polled: it runs
 * only while a CLI waits. At `waitMs`, connected counts as started.
 */
async function awaitRegistered(engine: Engine, sup: Supervisor, name: string, since: number, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  let settling: { registrations: number; since: number; connectedAt: number } | null = null;
  for (;;) {
    const exit = sup.lastExit(name);
    if (exit && exit.at >= since) {
      const last = tellingLine(exit.output);
      throw new EngineError('worker_start_failed', `Worker ${name} exited while starting (${exit.how})${last ? `: ${last}` : ''}`);
    }
    const row = sup.get(name);
    if (!row || row.status === 'stopped') throw new EngineError('worker_start_failed', `Worker ${name} was stopped while starting`);
    const conns = connectionsOf(engine, name);
    const now = Date.now();
    if (conns.length >= Number(row.replicas)) {
      const registrations = conns.reduce((n, s) => n + s.registrations, 0);
      if (settling === null) settling = { registrations, since: now, connectedAt: now };
      else if (settling.registrations !== registrations) Object.assign(settling, { registrations, since: now });
      else if (now - settling.since >= SETTLE_MS || now - settling.connectedAt >= SETTLE_MAX_MS) return true;
    } else settling = null;
    if (now >= deadline) return settling !== null;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Let the calls in flight to worker `name` finish before it is stopped: its connections leave the
 * registry first, so no new call is routed to them (other replicas or workers serving the same
 * functions take them; results of calls already made still find their way, they are matched by
 * connection), then this waits until none has a call in flight, or `graceMs` passes. Returns how many
 * calls were in flight when it began and how many were left.
 */
async function drain(engine: Engine, name: string, graceMs: number): Promise<{ in_flight: number; left: number }> {
  const conns = connectionsOf(engine, name);
  for (const s of conns) engine.registry.removeAll(s);
  const inFlight = (): number => conns.reduce((n, s) => n + (s.open ? s.incoming.size : 0), 0);
  const atStart = inFlight();
  const deadline = Date.now() + graceMs;
  while (inFlight() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return { in_flight: atStart, left: inFlight() };
}

/**
 * `engine::supervisor::*`: how `svc worker add|list|remove|restart` reach the engine that runs the
 * workers. Management functions: issue #9 restricts them to admin tokens. `readEntries` reads
 * config.yaml's workers as the file says now (the CLI edits the file, the engine acts on it).
 */
export function installSupervisorFunctions(engine: Engine, sup: Supervisor, configFile: string, readEntries: () => WorkerEntry[]): void {
  const entryFromConfig = (name: string): WorkerEntry => {
    const entry = readEntries().find((e) => e.name === name);
    if (!entry) throw new EngineError('worker_not_found', notListedMessage(name, readEntries().map((e) => e.name), configFile));
    return entry;
  };
  const registry = engine.registry;
  registry.addBuiltin('engine::supervisor::list', 'Supervised workers: status, pids, restarts, and the connections and functions of their instances', () => ({
    workers: sup.list().map((w) => {
      const conns = connectionsOf(engine, String(w.name));
      return {
        ...w,
        connections: conns.length,
        functions: [...new Set(conns.flatMap((c) => [...c.functions]))].sort(),
        namespaces: [...new Set(conns.map((c) => c.namespace))].sort(),
        urls: urlsOf(conns),
        process: processTotals(conns),
      };
    }),
  }));
  /** Start (or restart) it, then wait up to wait_ms for it to register: `ready` says whether it did. */
  const startAndWait = async (fn: string, data: unknown, restart: boolean) => {
    const name = nameOf(data, fn);
    const force = (data as { force?: unknown }).force === true;
    const waitMs = waitOf(data, fn);
    const entry = entryFromConfig(name);
    const since = Date.now();
    // `svc worker add` of a worker that runs already leaves it alone (sup.start returns it as it is): say so.
    const already_running = !restart && !force && ['starting', 'running', 'restarting'].includes(String(sup.get(name)?.status));
    const m = restart || force ? await sup.restart(entry, { force }) : await sup.start(entry);
    const worker = sup.describe(m);
    if (worker.status === 'failed') throw new EngineError('worker_start_failed', `Worker ${name} failed to start: ${String(worker.last_error)}`);
    const ready = waitMs > 0 ? await awaitRegistered(engine, sup, name, since, waitMs) : connectionsOf(engine, name).length > 0;
    return { ...sup.describe(m), ready, already_running, urls: urlsOf(connectionsOf(engine, name)) };
  };
  registry.addBuiltin(
    'engine::supervisor::add',
    'Start supervising a worker listed in config.yaml ({name, force?, wait_ms?}); with wait_ms, waits for it to register and fails with worker_start_failed if it exits first',
    (data) => startAndWait('engine::supervisor::add', data, false),
  );
  registry.addBuiltin(
    'engine::supervisor::restart',
    'Restart a supervised worker ({name, force?, wait_ms?}); with wait_ms, waits for it to register and fails with worker_start_failed if it exits first',
    (data) => startAndWait('engine::supervisor::restart', data, true),
  );
  registry.addBuiltin('engine::supervisor::stop', 'Stop a supervised worker, keeping it listed (restart starts it again) ({name})', async (data) => {
    const name = nameOf(data, 'engine::supervisor::stop');
    if (!sup.get(name)) throw new EngineError('worker_not_found', `Worker ${name} is not supervised by this engine`);
    await sup.stop(name);
    return sup.get(name);
  });
  registry.addBuiltin(
    'engine::supervisor::remove',
    'Stop supervising a worker and stop it ({name, drain_ms?}); with drain_ms, new calls stop going to it and calls in flight may finish for that long first',
    async (data) => {
      const name = nameOf(data, 'engine::supervisor::remove');
      const drainMs = (data as { drain_ms?: unknown }).drain_ms ?? 0;
      if (typeof drainMs !== 'number' || !Number.isInteger(drainMs) || drainMs < 0 || drainMs > MAX_WAIT_MS) {
        throw new EngineError('invalid_payload', `engine::supervisor::remove: "drain_ms" must be an integer from 0 to ${MAX_WAIT_MS}, got ${JSON.stringify(drainMs)}`);
      }
      const drained = drainMs > 0 && sup.get(name) ? await drain(engine, name, drainMs) : { in_flight: 0, left: 0 };
      return { removed: await sup.remove(name), ...drained };
    },
  );
}
