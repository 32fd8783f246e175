import { traceIdOfTraceparent } from 'svc-sdk/internal';
import { boundValue, cutString, head, type StoredValues } from './budgets.js';
import { EngineError } from './errors.js';
import type { LogRing } from './hot/log-ring.js';
import { LINE_OVERHEAD, LOG_LEVELS, levelIndex } from './logs.js';
import { ENGINE_VERSION } from './options.js';
import type { Invocations } from './invocations.js';
import type { FunctionEntry, Registry } from './registry.js';
import type { Peer } from './peer.js';
import type { Session } from './session.js';
import type { Triggers } from './triggers.js';
import { enterNamespace, type NamespaceRules } from './namespaces.js';
import { reservedNameRefusal } from './worker-names.js';
import { installWorkerReports } from './worker-reports.js';

export interface BuiltinDeps {
  registry: Registry;
  triggers: Triggers;
  invocations: Invocations;
  logs: LogRing;
  sessions: () => Iterable<Session>;
  startedAt: number;
  onWorkerRegistered: (s: Peer) => void;
  /** Budgets of what a peer's registration stores (worker metadata here). */
  stored: StoredValues;
  /** An answer must fit in a frame: listings stay within half of it. */
  maxFrameBytes: number;
  namespaces: NamespaceRules;
  /** End a connection the engine refuses (a worker name held in its namespace). */
  close: (peer: Peer, why: string) => void;
}

function obj(data: unknown): Record<string, unknown> {
  return typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
}

/** A log line's function or invocation id: a non-empty string, else absent. */
function idOf(v: unknown): string | undefined {
  return typeof v === 'string' && v.length !== 0 ? v : undefined;
}

/** The trace id of a log line: given as is (32 characters) or inside a W3C traceparent. */
function traceIdOf(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  return v.length === 32 ? v : traceIdOfTraceparent(v);
}

function str(data: Record<string, unknown>, field: string, fn: string): string {
  const v = data[field];
  if (typeof v !== 'string' || v.length === 0) throw new EngineError('invalid_payload', `${fn}: "${field}" must be a non-empty string`);
  return v;
}

/** The engine's own functions, callable by id like any other (`svc trigger engine::workers::list`). */
export function installBuiltins(deps: BuiltinDeps): void {
  const registry = deps.registry;

  registry.addBuiltin('engine::workers::register', 'Attach metadata (name, runtime, version, pid, …) to the calling connection', (data, caller) => {
    if (!caller) return null;
    const m = obj(data);
    const { _caller_worker_id: _ignored, name, namespace: _listedApart, ...meta } = m;
    // Merged with what earlier calls gave, and bounded as a whole (budgets.ts): a worker calling
    // this again and again cannot grow its metadata without limit.
    caller.metadata = deps.stored.bound(caller, 'metadata', { metadata: { ...caller.metadata, ...meta } }).fields.metadata as Record<string, unknown>;
    if (m.role === 'client' || m.role === 'worker') caller.role = m.role;
    // The name of a built-in or of the engine's own clients is refused to anyone else; the rest
    // of the registration stands (an error frame tells the worker, which SDKs report, and a
    // caller that awaits the answer gets the error).
    const reserved = typeof name === 'string' && name.length > 0 ? reservedNameRefusal(name, caller.identity, caller.access.token) : null;
    const named = typeof name === 'string' && name.length > 0 && !reserved ? head(name, 200) : caller.name;
    // iii 0.23+: the namespace its functions go in (moved there if it registered some before).
    const unplaced = enterNamespace(deps.namespaces, registry, caller, m.namespace, named, deps.close);
    if (!unplaced) {
      caller.name = named;
      caller.metadata.name = caller.name;
    }
    const refusal = reserved ?? unplaced;
    deps.onWorkerRegistered(caller);
    if (refusal) {
      caller.sendError(refusal, { type: 'invokefunction', id: 'engine::workers::register' });
      throw new EngineError(refusal.code, refusal.message);
    }
    return null;
  }, true);

  installWorkerReports(registry);

  const visibleWorkers = (includeClients: boolean): Session[] =>
    [...deps.sessions()].filter((s) => includeClients || s.role !== 'client');

  registry.addBuiltin('engine::workers::list', 'Connected workers with their functions and load', (data) => ({
    workers: visibleWorkers(obj(data).include_clients === true).map((s) => s.describe()),
  }));

  registry.addBuiltin('engine::workers::info', 'One worker by worker_id or name', (data) => {
    const m = obj(data);
    const key = str(m, m.worker_id !== undefined ? 'worker_id' : 'name', 'engine::workers::info');
    const s = [...deps.sessions()].find((x) => x.id === key || x.name === key);
    if (!s) throw new EngineError('worker_not_found', `Worker ${key} not found`);
    return s.describe();
  });

  // `counts`: in-flight calls per function, counted once per request (a scan of every call in flight).
  const describeFunction = (e: FunctionEntry | undefined, counts = deps.invocations.countByFunction()): Record<string, unknown> | null => {
    if (!e) return null;
    const inFlight = counts.get(e.id) ?? 0;
    return {
      function_id: e.id,
      namespace: e.namespace,
      description: e.description ?? null,
      request_format: e.request_format ?? null,
      response_format: e.response_format ?? null,
      metadata: e.metadata ?? null,
      builtin: Boolean(e.builtin),
      workers: e.providers.map((p) => ({ worker_id: p.id, worker_name: p.name })),
      in_flight: inFlight,
    };
  };

  registry.addBuiltin('engine::functions::list', 'Registered functions, with the workers serving each', (data) => {
    const includeBuiltins = obj(data).include_builtins !== false;
    const counts = deps.invocations.countByFunction();
    return {
      functions: registry
        .list()
        .filter((e) => includeBuiltins || !e.builtin)
        .map((e) => describeFunction(e, counts)),
    };
  });

  registry.addBuiltin('engine::functions::info', 'One function by function_id', (data) => {
    const m = obj(data);
    const id = str(m, 'function_id', 'engine::functions::info');
    const f = describeFunction(registry.lookup(id, typeof m.namespace === 'string' ? m.namespace : undefined));
    if (!f) throw new EngineError('function_not_found', `Function ${id} not found`);
    return f;
  });

  registry.addBuiltin('engine::triggers::list', 'Trigger types and their providers', () => ({ trigger_types: deps.triggers.listTypes() }));
  registry.addBuiltin('engine::registered-triggers::list', 'Trigger bindings (function ↔ event source)', () => ({ triggers: deps.triggers.listBindings() }));
  // The two info ids iii's SDKs name in EngineFunctions (INFO_TRIGGERS, INFO_REGISTERED_TRIGGERS): `{id}`, one row of the list.
  registry.addBuiltin('engine::triggers::info', 'One trigger type by id', (data) => {
    const id = str(obj(data), 'id', 'engine::triggers::info');
    const t = deps.triggers.listTypes().find((x) => x.id === id);
    if (!t) throw new EngineError('trigger_type_not_found', `Trigger type ${id} not found`);
    return t;
  });
  registry.addBuiltin('engine::registered-triggers::info', 'One trigger binding by id', (data) => {
    const id = str(obj(data), 'id', 'engine::registered-triggers::info');
    const b = deps.triggers.listBindings().find((x) => x.id === id);
    if (!b) throw new EngineError('trigger_not_found', `Trigger ${id} not found`);
    return b;
  });

  registry.addBuiltin('engine::queues::list', 'Calls in flight per function. Payload {exclude_trace_prefix?}: leave out calls in traces whose id begins with it', (data) => {
    const prefix = (data as { exclude_trace_prefix?: unknown } | null)?.exclude_trace_prefix;
    if (prefix !== undefined && prefix !== null && (typeof prefix !== 'string' || !/^[0-9a-f]{1,32}$/.test(prefix))) {
      throw new EngineError('invalid_payload', `engine::queues::list: exclude_trace_prefix must be 1 to 32 lowercase hex digits, got ${JSON.stringify(prefix)?.slice(0, 80)}`);
    }
    const counts = deps.invocations.countByFunction(typeof prefix === 'string' ? prefix : undefined);
    return { queues: [...counts].map(([function_id, in_flight]) => ({ function_id, in_flight, waiting: 0 })) };
  });

  // Logger lines arrive at the call rate: nothing here allocates per line (LogRing.addLine
  // stores the strings and data the frame's parse made), and the time is read once per call.
  // Their size: a frame within max_stored_value_bytes cannot hold a message or data over it, and
  // its lines share its length as their charge; only lines of a larger frame are measured (and cut
  // with a marker when over, budgets.ts), at a cost like that of the frame's parse.
  const maxValue = deps.stored.maxValue;
  const message = (v: unknown): string => cutString(typeof v === 'string' ? v : (JSON.stringify(v ?? '') ?? ''), maxValue, 'message');
  /** Adds one line, measuring it unless `size` (its share of a small frame) is given. */
  const addLine = (
    level: number,
    msg: unknown,
    caller: Peer | null,
    functionId: unknown,
    invocationId: unknown,
    traceId: string | undefined,
    data: unknown,
    ms: number,
    size: number,
  ): void => {
    let text: string;
    if (size === 0) {
      text = message(msg);
      const bounded = boundValue(data, maxValue, 'data');
      data = bounded.value;
      size = text.length + bounded.size + LINE_OVERHEAD;
    } else {
      text = typeof msg === 'string' ? msg : (JSON.stringify(msg ?? '') ?? '');
    }
    deps.logs.addLine(level, false, text, caller?.id, caller?.name, idOf(functionId), idOf(invocationId), traceId, data, ms, size);
  };
  /** A line's share of a frame small enough to hold no value over the budget; 0: measure each line. */
  const share = (frameChars: number, lines: number): number => (frameChars !== 0 && frameChars <= maxValue ? Math.ceil(frameChars / Math.max(1, lines)) : 0);
  const addObject = (level: number, m: Record<string, unknown>, caller: Peer | null, ms: number, size: number): void => {
    addLine(level, m.message, caller, m.function_id, m.invocation_id, traceIdOf(m.traceparent), m.data, ms, size);
  };
  for (const level of LOG_LEVELS) {
    const index = levelIndex(level)!;
    registry.addBuiltin(`engine::log::${level}`, `Store a ${level} log line from the calling worker`, (data, caller, frameChars) => {
      addObject(index, obj(data), caller, Date.now(), share(frameChars, 1));
      return null;
    });
  }
  // The SDKs send the lines of one event-loop turn in one call: a frame per line would cost a
  // routed call's worth of work each. A line is an object (as the single-line calls take) or,
  // smaller to send and to parse, a row [level, message, data, function_id, invocation_id,
  // trace_id] (null or left off: absent).
  registry.addBuiltin(
    'engine::log::batch',
    'Store several log lines: {lines: [{level, message, data?, function_id?, invocation_id?, traceparent?} | [level, message, data?, function_id?, invocation_id?, trace_id?]]}',
    (data, caller, frameChars) => {
      const lines = obj(data).lines;
      if (!Array.isArray(lines)) throw new EngineError('invalid_payload', 'engine::log::batch: "lines" must be an array');
      const ms = Date.now();
      const size = share(frameChars, lines.length);
      for (let k = 0; k < lines.length; k++) {
        const line: unknown = lines[k];
        if (Array.isArray(line)) {
          const row = line as unknown[];
          const data = row[2];
          addLine(levelIndex(row[0]) ?? 1, row[1], caller, row[3], row[4], traceIdOf(row[5]), data === null ? undefined : data, ms, size);
        } else {
          const m = obj(line);
          addObject(levelIndex(m.level) ?? 1, m, caller, ms, size);
        }
      }
      return null;
    },
  );

  registry.addBuiltin('engine::logs::list', 'Stored log lines, oldest first; filter by worker, level, text, since_seq, limit', (data) => {
    const m = obj(data);
    if (m.level !== undefined && levelIndex(m.level) === undefined) {
      throw new EngineError('invalid_payload', `engine::logs::list: "level" must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(m.level)}`);
    }
    return {
      logs: deps.logs.list(
        {
          ...(typeof m.limit === 'number' ? { limit: m.limit } : {}),
          ...(typeof m.worker === 'string' ? { worker: m.worker } : {}),
          ...(typeof m.level === 'string' ? { level: m.level } : {}),
          ...(typeof m.since_seq === 'number' ? { since_seq: m.since_seq } : {}),
          ...(typeof m.text === 'string' ? { text: m.text } : {}),
        },
        deps.maxFrameBytes / 2,
      ),
    };
  });

  registry.addBuiltin('engine::health::check', 'Engine status and counts', () => {
    const all = [...deps.sessions()];
    return {
      status: 'ok',
      version: ENGINE_VERSION,
      uptime_ms: Date.now() - deps.startedAt,
      workers: all.filter((s) => s.role !== 'client').length,
      connections: all.length,
      functions: registry.list().filter((e) => !e.builtin).length,
      in_flight: deps.invocations.size,
    };
  });
}
