import type { QueueCounters, StateCounters } from 'svc-sdk/protocol';
import { EngineError } from './errors.js';

/**
 * What the built-in svc-state and svc-queue add to their process reports (engine::workers::report,
 * worker-reports.ts): their own counters, which the engine exports on /metrics and over OTLP. They
 * are ordinary SDK workers, so the engine learns these numbers the way it learns any worker's CPU:
 * from the worker. Any worker may send these fields; they are labelled with its name.
 */

export type { QueueCounters, StateCounters };

export const STATE_FIELDS = ['gets', 'sets', 'updates', 'deletes', 'lists', 'set_bytes'] as const;
export const QUEUE_EVENTS = ['enqueued', 'completed', 'retried', 'dead_lettered'] as const;
export const QUEUE_STATES = ['waiting', 'delayed', 'running', 'dlq'] as const;

/** Queues per report: svc-queue's queues are named in its config, so a real one has far fewer. */
export const MAX_REPORTED_QUEUES = 200;
const MAX_QUEUE_NAME = 128;
const MAX_VALUE = 1e15;

/** The function these fields arrive with (worker-reports.ts REPORT_FUNCTION; not imported: that file imports this one). */
const fn = 'engine::workers::report';

/** A count or measure of a report: a number from 0 to 1e15; `where` names the field in the error. */
export function reportNumber(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_VALUE) {
    throw new EngineError('invalid_payload', `${fn}: "${where}" must be a number from 0 to 1e15, got ${JSON.stringify(v)?.slice(0, 40)}`);
  }
  return v;
}

/** A mapping of a report; `where` names the field in the error. */
export function reportObject(v: unknown, where: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new EngineError('invalid_payload', `${fn}: "${where}" must be an object`);
  return v as Record<string, unknown>;
}

/** A counter left out is 0. */
const count = (m: Record<string, unknown>, field: string, where: string): number => (m[field] === undefined ? 0 : reportNumber(m[field], `${where}.${field}`));

export function parseStateCounters(v: unknown): StateCounters | null {
  if (v === undefined || v === null) return null;
  const m = reportObject(v, 'state');
  const out = {} as StateCounters;
  for (const f of STATE_FIELDS) out[f] = count(m, f, 'state');
  return out;
}

export function parseQueueCounters(v: unknown): QueueCounters[] | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) throw new EngineError('invalid_payload', `${fn}: "queues" must be an array`);
  if (v.length > MAX_REPORTED_QUEUES) throw new EngineError('invalid_payload', `${fn}: "queues" may name at most ${MAX_REPORTED_QUEUES} queues, got ${v.length}`);
  const seen = new Set<string>();
  return v.map((q: unknown, i) => {
    const m = reportObject(q, `queues[${i}]`);
    const name = m.queue;
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_QUEUE_NAME) {
      throw new EngineError('invalid_payload', `${fn}: "queues[${i}].queue" must be a string of 1 to ${MAX_QUEUE_NAME} characters`);
    }
    if (seen.has(name)) throw new EngineError('invalid_payload', `${fn}: queue ${JSON.stringify(name)} is named twice in "queues"`);
    seen.add(name);
    const out = { queue: name } as QueueCounters;
    for (const f of QUEUE_EVENTS) out[f] = count(m, f, `queues[${i}]`);
    for (const f of QUEUE_STATES) out[f] = count(m, f, `queues[${i}]`);
    return out;
  });
}
