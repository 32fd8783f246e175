/**
 * svc-state on the wire: an ordinary worker, written on svc-sdk, that registers the `state::*`
 * functions and provides the `state` trigger type. Everything a caller sees is decided in
 * service.ts (handlers), ops.ts (update ops) and the stores; this file only connects them.
 */
import { DEFAULT_MAX_FRAME_BYTES, registerWorker, Logger, type TriggerBinding, type Worker } from 'svc-sdk';
import { ANSWER_FRAME_ROOM, FUNCTION_DESCRIPTIONS, newStateCounts, stateFunctions, type CallParent, type StateEvent, type StateFunctions } from './service.js';
import { StateError, type StateStore } from './store.js';
import { parseStateConfig, type StateConfig } from './config.js';
import { hasLoneSurrogate } from '../shared/describe.js';

export interface StateWorkerOptions {
  /** Engine address; default env SVC_URL, else ws://localhost:49134. */
  url?: string;
  /** Parsed config, or the raw config.yaml object (snake_case keys). Default: all defaults. */
  config?: StateConfig | Record<string, unknown>;
  workerName?: string;
  /** The engine run's secret for this instance; default env SVC_RUN_SECRET (the supervisor sets it). */
  runSecret?: string;
  /** Resolve only once the functions are callable through the engine (default true). */
  waitReady?: boolean;
  /** Deadline of that first call; default: the engine's invocation_timeout_ms. */
  readyTimeoutMs?: number;
}

export interface RunningStateWorker {
  worker: Worker;
  config: StateConfig;
  shutdown(): Promise<void>;
}

/** A `state` trigger binding: fires `function_id` on changes matching the optional filters. */
interface Binding {
  /** The binding's id: its calls carry it, so the engine runs them with the binder's rights. */
  id: string;
  function_id: string;
  scope?: string;
  key?: string;
  condition_function_id?: string;
}

function isParsed(c: StateWorkerOptions['config']): c is StateConfig {
  return typeof c === 'object' && c !== null && 'dataDir' in c && 'maxValueBytes' in c;
}

export async function openStore(config: StateConfig): Promise<StateStore> {
  const limits = { maxValueBytes: config.maxValueBytes };
  // Only the configured store's module is loaded: the Redis client costs a start ~0.15 s of CPU.
  return config.store === 'redis'
    ? (await import('./redis-store.js')).openRedisStore({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, ...limits })
    : (await import('./embedded-store.js')).openEmbeddedStore({ dataDir: config.dataDir, ...limits });
}

function parseBinding(b: TriggerBinding): Binding {
  const c = (b.config ?? {}) as Record<string, unknown>;
  const refuse = (msg: string) => new StateError('invalid_payload', `state trigger ${b.id} for ${b.function_id}: ${msg}`);
  if (typeof c !== 'object' || Array.isArray(c)) throw refuse('config must be an object {scope?, key?, condition_function_id?}');
  const out: Binding = { id: b.id, function_id: b.function_id };
  for (const f of ['scope', 'key', 'condition_function_id'] as const) {
    const v = c[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v === '') throw refuse(`config.${f} must be a non-empty string, got ${JSON.stringify(v)}`);
    // state::* refuses such a scope or key, so a binding to one would never fire.
    if (hasLoneSurrogate(v)) throw refuse(`config.${f} ${JSON.stringify(v)} is not valid Unicode (lone surrogate)`);
    out[f] = v;
  }
  return out;
}

export async function startStateWorker(opts: StateWorkerOptions = {}): Promise<RunningStateWorker> {
  const config = isParsed(opts.config) ? opts.config : parseStateConfig(opts.config);
  const store = await openStore(config);
  // No AsyncLocalStorage scope per call: on Node 20 it puts promise hooks on every promise of the
  // process (the store's included), about 2 µs per state call here (bench/RESULTS.md, session 4).
  // The one nested call svc-state makes, a trigger's fire, is given its parent explicitly.
  const worker = registerWorker(opts.url, {
    workerName: opts.workerName ?? 'svc-state',
    ...(opts.runSecret ? { runSecret: opts.runSecret } : {}),
    metadata: { store: config.store },
    implicitContext: false,
  });
  const log = new Logger(worker);
  const bindings = new Map<string, Binding>();

  const fire = async (b: Binding, event: StateEvent, parent: CallParent | undefined) => {
    try {
      // Both calls are the binding's: the engine authorizes them with its binder's rights, not
      // svc-state's (a binder may not have a function it could not call run as a condition).
      if (b.condition_function_id) {
        const ok = await worker.trigger({ function_id: b.condition_function_id, payload: event, parent, bindingId: b.id });
        if (!ok) return;
      }
      await worker.trigger({ function_id: b.function_id, payload: event, action: { type: 'void' }, parent, bindingId: b.id });
    } catch (e) {
      log.warn(`state trigger for ${b.function_id} failed on ${event.event_type} of ${event.scope}/${event.key}: ${(e as Error).message}`);
    }
  };
  const onChange = (event: StateEvent, parent: CallParent | undefined) => {
    if (bindings.size === 0) return; // the hot path: no triggers, no work
    for (const b of bindings.values()) {
      if (b.scope !== undefined && b.scope !== event.scope) continue;
      if (b.key !== undefined && b.key !== event.key) continue;
      void fire(b, event, parent);
    }
  };

  // The handlers go on the wire as they are: no wrapper per call (every promise costs CPU on this
  // hot path). Calls still running at shutdown are safe without one: store.close() lets the
  // operations already issued finish first.
  // A state::list answer must fit in a frame the engine accepts (its hello tells its limit).
  const answerBytes = (): number => Math.min(worker.engine?.max_frame_bytes ?? DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES) - ANSWER_FRAME_ROOM;
  const counts = newStateCounts();
  worker.reportAlso(() => ({ state: counts }));
  const fns = stateFunctions(store, { maxValueBytes: config.maxValueBytes, answerBytes }, onChange, counts);
  for (const id of Object.keys(fns) as (keyof StateFunctions)[]) {
    worker.registerFunction(id, fns[id], { description: FUNCTION_DESCRIPTIONS[id] });
  }
  await worker.registerTriggerType(
    {
      id: 'state',
      description: 'Fires the bound function when a state key changes. Config {scope?, key?, condition_function_id?}; payload {type: "state", event_type: state:created|state:updated|state:deleted, scope, key, old_value, new_value}.',
      // A binding receives every write it matches, values included: what state::get would show.
      binding_requires_call: ['state::get'],
    },
    {
      registerTrigger: (b: TriggerBinding) => {
        bindings.set(b.id, parseBinding(b));
      },
      unregisterTrigger: (b: TriggerBinding) => {
        bindings.delete(b.id);
      },
    },
  );

  const shutdown = async () => {
    await worker.shutdown();
    await store.close();
  };

  if (opts.waitReady !== false) {
    try {
      // A call to ourselves through the engine: once it answers, our registrations were processed.
      await worker.trigger({ function_id: 'state::list_groups', payload: {}, timeoutMs: opts.readyTimeoutMs });
    } catch (e) {
      await shutdown().catch(() => {});
      throw e;
    }
  }
  return { worker, config, shutdown };
}
