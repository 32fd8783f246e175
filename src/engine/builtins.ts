import { EngineError } from './errors.js';
import { LOG_LEVELS, type LogBuffer, type LogEntry } from './logs.js';
import { ENGINE_VERSION } from './options.js';
import type { Invocations } from './invocations.js';
import type { Registry } from './registry.js';
import type { Session } from './session.js';
import type { Triggers } from './triggers.js';

export interface BuiltinDeps {
  registry: Registry;
  triggers: Triggers;
  invocations: Invocations;
  logs: LogBuffer;
  sessions: () => Iterable<Session>;
  startedAt: number;
  onWorkerRegistered: (s: Session) => void;
}

function obj(data: unknown): Record<string, unknown> {
  return typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
}

function str(data: Record<string, unknown>, field: string, fn: string): string {
  const v = data[field];
  if (typeof v !== 'string' || v.length === 0) throw new EngineError('invalid_payload', `${fn}: "${field}" must be a non-empty string`);
  return v;
}

/** The engine's own functions, callable by id like any other (`svc trigger engine::workers::list`). */
export function installBuiltins(d: BuiltinDeps): void {
  const r = d.registry;

  r.addBuiltin('engine::workers::register', 'Attach metadata (name, runtime, version, pid, …) to the calling connection', (data, caller) => {
    if (!caller) return null;
    const m = obj(data);
    const { _caller_worker_id: _ignored, ...meta } = m;
    caller.metadata = { ...caller.metadata, ...meta };
    if (typeof m.name === 'string' && m.name.length > 0) caller.name = m.name.slice(0, 200);
    if (m.role === 'client' || m.role === 'worker') caller.role = m.role;
    d.onWorkerRegistered(caller);
    return null;
  });

  const visibleWorkers = (includeClients: boolean): Session[] =>
    [...d.sessions()].filter((s) => includeClients || s.role !== 'client');

  r.addBuiltin('engine::workers::list', 'Connected workers with their functions and load', (data) => ({
    workers: visibleWorkers(obj(data).include_clients === true).map((s) => s.describe()),
  }));

  r.addBuiltin('engine::workers::info', 'One worker by worker_id or name', (data) => {
    const m = obj(data);
    const key = str(m, m.worker_id !== undefined ? 'worker_id' : 'name', 'engine::workers::info');
    const s = [...d.sessions()].find((x) => x.id === key || x.name === key);
    if (!s) throw new EngineError('worker_not_found', `Worker ${key} not found`);
    return s.describe();
  });

  // `counts`: in-flight calls per function, counted once per request (a scan of every call in flight).
  const describeFunction = (id: string, counts = d.invocations.countByFunction()): Record<string, unknown> | null => {
    const e = r.get(id);
    if (!e) return null;
    const inFlight = counts.get(id) ?? 0;
    return {
      function_id: e.id,
      description: e.description ?? null,
      request_format: e.request_format ?? null,
      response_format: e.response_format ?? null,
      metadata: e.metadata ?? null,
      builtin: Boolean(e.builtin),
      workers: e.providers.map((p) => ({ worker_id: p.id, worker_name: p.name })),
      in_flight: inFlight,
    };
  };

  r.addBuiltin('engine::functions::list', 'Registered functions, with the workers serving each', (data) => {
    const includeBuiltins = obj(data).include_builtins !== false;
    const counts = d.invocations.countByFunction();
    return {
      functions: r
        .list()
        .filter((e) => includeBuiltins || !e.builtin)
        .map((e) => describeFunction(e.id, counts)),
    };
  });

  r.addBuiltin('engine::functions::info', 'One function by function_id', (data) => {
    const id = str(obj(data), 'function_id', 'engine::functions::info');
    const f = describeFunction(id);
    if (!f) throw new EngineError('function_not_found', `Function ${id} not found`);
    return f;
  });

  r.addBuiltin('engine::triggers::list', 'Trigger types and their providers', () => ({ trigger_types: d.triggers.listTypes() }));
  r.addBuiltin('engine::registered-triggers::list', 'Trigger bindings (function ↔ event source)', () => ({ triggers: d.triggers.listBindings() }));

  r.addBuiltin('engine::queues::list', 'Calls in flight per function', () => {
    const counts = d.invocations.countByFunction();
    return { queues: [...counts].map(([function_id, in_flight]) => ({ function_id, in_flight, waiting: 0 })) };
  });

  // One object literal, fields filled or undefined (JSON leaves those out): this runs for every
  // Logger line of every worker.
  const addLine = (level: LogEntry['level'], m: Record<string, unknown>, caller: Session | null): void => {
      const tp = m.traceparent;
      d.logs.add({
        level,
        message: typeof m.message === 'string' ? m.message.slice(0, 64 * 1024) : JSON.stringify(m.message ?? ''),
        source: 'worker',
        worker_id: caller?.id,
        worker_name: caller?.name,
        function_id: typeof m.function_id === 'string' && m.function_id ? m.function_id : undefined,
        invocation_id: typeof m.invocation_id === 'string' && m.invocation_id ? m.invocation_id : undefined,
        trace_id: typeof tp === 'string' && tp.length >= 35 && tp[2] === '-' ? tp.slice(3, 35) : undefined,
        data: m.data,
      } as Omit<LogEntry, 'seq' | 'time'>);
  };
  for (const level of LOG_LEVELS) {
    r.addBuiltin(`engine::log::${level}`, `Store a ${level} log line from the calling worker`, (data, caller) => {
      addLine(level, obj(data), caller);
      return null;
    });
  }
  // The SDKs send the lines of one event-loop turn in one call: a frame per line would cost a
  // routed call's worth of work each (bench/RESULTS.md, tracing and logging).
  r.addBuiltin('engine::log::batch', 'Store several log lines: {lines: [{level, message, data?, function_id?, invocation_id?, traceparent?}]}', (data, caller) => {
    const lines = obj(data).lines;
    if (!Array.isArray(lines)) throw new EngineError('invalid_payload', 'engine::log::batch: "lines" must be an array');
    for (const line of lines) {
      const m = obj(line);
      const level = LOG_LEVELS.includes(m.level as LogEntry['level']) ? (m.level as LogEntry['level']) : 'info';
      addLine(level, m, caller);
    }
    return null;
  });

  r.addBuiltin('engine::logs::list', 'Stored log lines, oldest first; filter by worker, level, text, since_seq, limit', (data) => {
    const m = obj(data);
    if (m.level !== undefined && !LOG_LEVELS.includes(m.level as LogEntry['level'])) {
      throw new EngineError('invalid_payload', `engine::logs::list: "level" must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(m.level)}`);
    }
    return {
      logs: d.logs.list({
        ...(typeof m.limit === 'number' ? { limit: m.limit } : {}),
        ...(typeof m.worker === 'string' ? { worker: m.worker } : {}),
        ...(typeof m.level === 'string' ? { level: m.level } : {}),
        ...(typeof m.since_seq === 'number' ? { since_seq: m.since_seq } : {}),
        ...(typeof m.text === 'string' ? { text: m.text } : {}),
      }),
    };
  });

  r.addBuiltin('engine::health::check', 'Engine status and counts', () => {
    const all = [...d.sessions()];
    return {
      status: 'ok',
      version: ENGINE_VERSION,
      uptime_ms: Date.now() - d.startedAt,
      workers: all.filter((s) => s.role !== 'client').length,
      connections: all.length,
      functions: r.list().filter((e) => !e.builtin).length,
      in_flight: d.invocations.size,
    };
  });
}
