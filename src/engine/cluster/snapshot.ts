import { DEFAULT_NAMESPACE } from 'svc-sdk/protocol';
import type { Registry } from '../registry.js';
import type { Session } from '../session.js';
import type { Triggers } from '../triggers.js';

/**
 * What one engine publishes about itself: the functions and trigger types its own workers
 * provide, and the workers themselves. Other engines build their view of the cluster from these.
 * Volatile fields (uptime, load, process metrics) are left out, so the text changes only when something real does
 * and an unchanged snapshot is never re-published.
 */
export interface NodeSnapshot {
  node: string;
  /** The engine's incarnation, as in its lease (the keys are those stored in Redis: docs/cluster.md). */
  inc: string;
  /** The snapshot's version, as in the lease that names it. */
  ver: number;
  url: string;
  started_at: string;
  functions: Array<{
    id: string;
    description?: string;
    request_format?: unknown;
    response_format?: unknown;
    metadata?: Record<string, unknown>;
    workers: Array<{ worker_id: string; worker_name: string }>;
  }>;
  trigger_types: Array<{ id: string; description?: string; trigger_request_format?: unknown; call_request_format?: unknown; binding_requires_call?: string[]; binding_mode?: 'one' | 'all' }>;
  workers: Array<Record<string, unknown>>;
}

/** The snapshot body (everything but `ver`), from this engine's own sessions only. */
export function buildSnapshot(
  head: Pick<NodeSnapshot, 'node' | 'inc' | 'url' | 'started_at'>,
  registry: Registry,
  triggers: Triggers,
  sessions: Iterable<Session>,
  withdrawn: boolean,
): Omit<NodeSnapshot, 'ver'> {
  const snap: Omit<NodeSnapshot, 'ver'> = { ...head, functions: [], trigger_types: [], workers: [] };
  if (withdrawn) return snap;
  for (const e of registry.list()) {
    // Other engines route by function id alone: a namespace's functions stay on their engine.
    if (e.builtin || e.namespace !== DEFAULT_NAMESPACE) continue;
    const local = e.providers.filter((p) => p.node === undefined);
    if (local.length === 0) continue;
    snap.functions.push({
      id: e.id,
      ...(e.description !== undefined ? { description: e.description } : {}),
      ...(e.request_format !== undefined ? { request_format: e.request_format } : {}),
      ...(e.response_format !== undefined ? { response_format: e.response_format } : {}),
      ...(e.metadata !== undefined ? { metadata: e.metadata } : {}),
      workers: local.map((p) => ({ worker_id: p.id, worker_name: p.name })),
    });
  }
  const typeIds = new Set<string>();
  for (const s of sessions) {
    for (const t of s.triggerTypes) typeIds.add(t);
    if (s.role === 'client') continue;
    const { uptime_ms: _u, in_flight: _f, process: _p, ...stable } = s.describe();
    snap.workers.push(stable);
  }
  for (const t of triggers.listTypes()) {
    if (!typeIds.has(t.id as string)) continue;
    // What this engine's own providers ask of a binder (another engine's, it publishes itself).
    const requires = triggers.localRequiredCalls(t.id as string);
    snap.trigger_types.push({
      id: t.id as string,
      ...(t.description != null ? { description: t.description as string } : {}),
      ...(t.trigger_request_format != null ? { trigger_request_format: t.trigger_request_format } : {}),
      ...(t.call_request_format != null ? { call_request_format: t.call_request_format } : {}),
      ...(requires.length > 0 ? { binding_requires_call: requires } : {}),
      ...(t.binding_mode === 'all' ? { binding_mode: 'all' as const } : {}),
    });
  }
  return snap;
}
