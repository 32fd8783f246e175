import { EngineError } from './errors.js';
import type { Registry } from './registry.js';
import type { SpanRing } from './hot/span-ring.js';

function obj(data: unknown): Record<string, unknown> {
  return typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
}

/** `engine::traces::list` and `engine::traces::get`; with tracing off they answer empty, saying so. */
export function installTraceBuiltins(registry: Registry, traces: SpanRing | null): void {
  registry.addBuiltin('engine::traces::list', 'Recent traces, newest first, with their root span; filter by function_id, worker, errors_only, limit', (data) => {
    const m = obj(data);
    if (m.limit !== undefined && !(typeof m.limit === 'number' && Number.isInteger(m.limit) && m.limit > 0)) {
      throw new EngineError('invalid_payload', `engine::traces::list: "limit" must be a positive integer, got ${JSON.stringify(m.limit)}`);
    }
    if (!traces) return { tracing: false, traces: [] };
    return {
      tracing: true,
      traces: traces.list({
        ...(typeof m.limit === 'number' ? { limit: m.limit } : {}),
        ...(typeof m.function_id === 'string' && m.function_id ? { function_id: m.function_id } : {}),
        ...(typeof m.worker === 'string' && m.worker ? { worker: m.worker } : {}),
        ...(m.errors_only === true ? { errors_only: true } : {}),
      }),
    };
  });

  registry.addBuiltin('engine::traces::get', 'The spans of one trace by trace_id, parents before children, siblings by start', (data) => {
    const id = obj(data).trace_id;
    if (typeof id !== 'string' || id.length === 0) throw new EngineError('invalid_payload', 'engine::traces::get: "trace_id" must be a non-empty string');
    const t = traces?.get(id.toLowerCase());
    if (!t) throw new EngineError('trace_not_found', `Trace ${id} not found${traces ? ' (it may have left the trace buffer)' : ': tracing is off (engine.tracing)'}`);
    return t;
  });
}
