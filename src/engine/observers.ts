/**
 * iii 0.25's observers (`observe.v1`, auto delivery): a worker asks that every settled invocation of
 * a function (the source) that passes a filter invoke another function (the target) with what the
 * invocation took and gave. The engine observes the calls it routes itself, so the observed
 * function's worker takes no part (no `observeradded`, no owner delivery, no local dispatch). The
 * frames and fields are iii-sdk 0.25's (docs/iii-compatibility.md); svc's codes in docs/errors.md.
 */
import { DEFAULT_NAMESPACE, type ErrorBody, type ObserveMsg } from 'svc-sdk/protocol';
import type { Call, ObservedCall } from './call.js';
import { compileFilter, FilterError, type CompiledFilter } from './observe-filter.js';
import { MAX_ID_CHARS } from './errors.js';
import type { Peer } from './peer.js';
import type { Registry } from './registry.js';

export const OBSERVER_LIMITS = {
  /** Observers one connection may hold. */
  perWorker: 64,
  /** Observers the engine holds. */
  total: 4096,
  /** Activations of one observer running at once when it names no max_in_flight, and the most it may name. */
  defaultInFlight: 16,
  maxInFlight: 256,
  /** Activations one observer may hold queued beyond max_in_flight, by count and by bytes; more are dropped. */
  queued: 1024,
  queuedBytes: 4 * 1024 * 1024,
  /** Bytes of an observe frame's metadata. */
  metadataBytes: 64 * 1024,
  /** Observe hops a chain may take (an observer whose target calls what it observes ends here). */
  depth: 8,
} as const;

const CAPTURES = new Set(['input', 'output', 'error', 'caller', 'metadata']);
const DEFAULT_CAPTURE = ['input', 'output', 'caller'];

type State = 'pending' | 'active' | 'suspended' | 'disposed';

interface Observer {
  owner: Peer;
  id: string;
  key: string;
  target: { function_id: string; namespace: string };
  filter: CompiledFilter;
  on: 'success' | 'error' | 'complete';
  capture: string[];
  deliver: 'envelope' | 'input' | 'output';
  metadata: unknown;
  maxFires: number;
  maxInFlight: number;
  state: State;
  fires: number;
  /** Activations numbered so far (queued ones included): their ids. */
  seq: number;
  running: number;
  queue: { data: unknown; bytes: number; depth: number; activationId: string }[];
  queuedBytes: number;
  timer: NodeJS.Timeout | undefined;
}

/** Starts an activation: the target's invokefunction with `activation` and `observe_depth`; `done` when it settles. */
export type Activate = (target: { function_id: string; namespace: string }, data: unknown, extraFields: string, done: () => void) => ErrorBody | null;

export class Observers {
  /** `namespace\0function_id` of every observed function: the call path's one check. */
  readonly watched = new Map<string, Set<Observer>>();
  private readonly byOwner = new Map<Peer, Map<string, Observer>>();
  private count = 0;
  private activate: Activate | undefined;

  constructor(private readonly registry: Registry) {
    registry.onChange(() => this.retarget());
  }

  start(activate: Activate): void {
    this.activate = activate;
  }

  /** `observe`: create, or (same id from the same connection) answer with the current state. */
  observe(owner: Peer, m: ObserveMsg): void {
    const mine = this.byOwner.get(owner);
    const existing = mine?.get(m.id);
    if (existing) return this.result(existing);
    const refused = this.refusal(owner, m);
    if (refused !== null) return owner.sendText(JSON.stringify({ type: 'observeresult', id: m.id, state: 'error', error: refused }));
    let filter: CompiledFilter;
    try {
      filter = compileFilter(m.source.filters);
    } catch (e) {
      if (!(e instanceof FilterError)) throw e;
      const error = { code: 'invalid_filter', message: `Observer ${m.id}: ${e.message}` };
      return owner.sendText(JSON.stringify({ type: 'observeresult', id: m.id, state: 'error', error }));
    }
    const src = m.source;
    const key = `${src.namespace ?? owner.namespace ?? DEFAULT_NAMESPACE}\0${src.function_id}`;
    const o: Observer = {
      owner,
      id: m.id,
      key,
      target: { function_id: m.target.function_id, namespace: m.target.namespace ?? owner.namespace ?? DEFAULT_NAMESPACE },
      filter,
      on: (src.on ?? 'success') as Observer['on'],
      capture: Array.isArray(src.capture) ? (src.capture as string[]) : DEFAULT_CAPTURE,
      deliver: (src.deliver ?? 'envelope') as Observer['deliver'],
      metadata: m.metadata,
      maxFires: m.max_fires ?? Infinity,
      maxInFlight: m.max_in_flight ?? OBSERVER_LIMITS.defaultInFlight,
      state: 'pending',
      fires: 0,
      seq: 0,
      running: 0,
      queue: [],
      queuedBytes: 0,
      timer: undefined,
    };
    if (m.expires_in_ms !== undefined) {
      o.timer = setTimeout(() => this.dispose(o, { code: 'observer_expired', message: `Observer ${o.id} expired after ${m.expires_in_ms} ms` }), m.expires_in_ms);
      o.timer.unref();
    }
    this.byOwner.set(owner, (mine ?? new Map<string, Observer>()).set(o.id, o));
    let set = this.watched.get(key);
    if (!set) this.watched.set(key, (set = new Set()));
    set.add(o);
    this.count++;
    o.state = this.targetPresent(o) ? 'active' : 'pending';
    this.result(o);
  }

  /** `unobserve`: the observer ends; its activations in flight run to their end. */
  unobserve(owner: Peer, id: string): void {
    const o = this.byOwner.get(owner)?.get(id);
    if (o) this.dispose(o, { code: 'unobserved', message: `Observer ${id} was unobserved` });
  }

  /** The connection is gone: its observers end with it (an iii SDK replays them on its next one). */
  dropOwner(owner: Peer): void {
    const mine = this.byOwner.get(owner);
    if (!mine) return;
    for (const o of [...mine.values()]) this.remove(o);
  }

  /** Called from dispatch for a call of a watched function: what to keep until it settles. */
  observed(namespace: string, functionId: string, input: unknown, depth: unknown): ObservedCall | undefined {
    if (!this.watched.has(`${namespace}\0${functionId}`)) return undefined;
    return { input, startedAtMs: Date.now(), depth: typeof depth === 'number' && depth > 0 ? Math.floor(depth) : 0, namespace };
  }

  /** An observed call settled: each observer whose `on` and filter accept it fires. */
  settled(call: Call, obs: ObservedCall, result: unknown, error: ErrorBody | undefined): void {
    const set = this.watched.get(`${obs.namespace}\0${call.functionId}`);
    if (!set || obs.depth + 1 > OBSERVER_LIMITS.depth) return;
    const ok = error === undefined;
    const caller = call.caller === null ? undefined : { worker_id: call.caller.id, worker_name: call.caller.name };
    const doc: Record<string, unknown> = { input: obs.input, caller };
    if (ok) doc.output = result ?? null;
    else doc.error = error;
    for (const o of set) {
      if (o.state !== 'active' || !(o.on === 'complete' || (o.on === 'success') === ok) || !o.filter.matches(doc)) continue;
      const activationId = `${o.id}:${o.seq + 1}`;
      let data: unknown;
      if (o.deliver === 'input') data = obs.input;
      else if (o.deliver === 'output') data = ok ? (result ?? null) : null;
      else {
        const env: Record<string, unknown> = {
          observer_id: o.id,
          activation_id: activationId,
          function_id: call.functionId,
          namespace: obs.namespace,
          invocation_id: call.id,
          status: ok ? 'success' : 'error',
          started_at_ms: obs.startedAtMs,
          duration_ms: Date.now() - obs.startedAtMs,
        };
        for (const c of o.capture) if (c in doc && doc[c] !== undefined) env[c] = doc[c];
        data = env;
      }
      const bytes = JSON.stringify(data)?.length ?? 4;
      if (o.queue.length >= OBSERVER_LIMITS.queued || o.queuedBytes + bytes > OBSERVER_LIMITS.queuedBytes) continue;
      o.seq++;
      o.queue.push({ data, bytes, depth: obs.depth + 1, activationId });
      o.queuedBytes += bytes;
      this.drain(o);
    }
  }

  private drain(o: Observer): void {
    while (o.state === 'active' && o.running < o.maxInFlight && o.queue.length > 0 && o.fires < o.maxFires) {
      const next = o.queue.shift()!;
      o.queuedBytes -= next.bytes;
      o.fires++;
      const extra =
        ',"activation":' + JSON.stringify({ observer_id: o.id, activation_id: next.activationId }) +
        ',"observe_depth":' + next.depth +
        (o.metadata !== undefined ? ',"metadata":' + JSON.stringify(o.metadata) : '');
      o.running++;
      const refused = this.activate!(o.target, next.data, extra, () => {
        o.running--;
        this.drain(o);
      });
      if (refused !== null) o.running--;
      if (o.fires >= o.maxFires) {
        this.dispose(o, { code: 'observer_max_fires', message: `Observer ${o.id} fired ${o.fires} times (max_fires)` });
      }
    }
  }

  private refusal(owner: Peer, m: ObserveMsg): ErrorBody | null {
    const bad = (what: string): ErrorBody => ({ code: 'invalid_observer', message: `Observer ${m.id.slice(0, 200)}: ${what}` });
    const src = m.source;
    if (typeof src.function_id !== 'string' || src.function_id === '') return bad('source.function_id must be a non-empty string');
    if (typeof m.target.function_id !== 'string' || m.target.function_id === '') return bad('target.function_id must be a non-empty string');
    // Kept while the observer lives (64 per connection); filters are bounded by compileFilter.
    for (const [field, v] of [['id', m.id], ['source.function_id', src.function_id], ['target.function_id', m.target.function_id]] as const) {
      if (v.length > MAX_ID_CHARS) return bad(`${field} must be at most ${MAX_ID_CHARS} characters, got ${v.length}`);
    }
    for (const [field, v] of [['source.namespace', src.namespace], ['target.namespace', m.target.namespace]] as const) {
      if (v != null && typeof v !== 'string') return bad(`${field} must be a string`);
    }
    if (src.args !== undefined && src.args !== null) return bad('source.args is for owner-delivered functions, which svc does not serve');
    if (src.on != null && !['success', 'error', 'complete'].includes(src.on as string)) return bad('source.on must be success, error or complete');
    if (src.deliver != null && !['envelope', 'input', 'output'].includes(src.deliver as string)) return bad('source.deliver must be envelope, input or output');
    if (src.capture != null && !(Array.isArray(src.capture) && src.capture.every((c) => CAPTURES.has(c as string)))) {
      return bad('source.capture must be a list of input, output, error, caller, metadata');
    }
    for (const [field, v, max] of [['max_fires', m.max_fires, Number.MAX_SAFE_INTEGER], ['expires_in_ms', m.expires_in_ms, 2 ** 31 - 1], ['max_in_flight', m.max_in_flight, OBSERVER_LIMITS.maxInFlight]] as const) {
      if (v !== undefined && !(Number.isInteger(v) && v >= 1 && v <= max)) return bad(`${field} must be an integer from 1 to ${max}`);
    }
    if (m.metadata !== undefined && (JSON.stringify(m.metadata)?.length ?? 0) > OBSERVER_LIMITS.metadataBytes) return bad(`metadata over ${OBSERVER_LIMITS.metadataBytes} bytes`);
    if ((this.byOwner.get(owner)?.size ?? 0) >= OBSERVER_LIMITS.perWorker) {
      return { code: 'too_many_observers', message: `${owner.name} holds ${OBSERVER_LIMITS.perWorker} observers, the most one connection may` };
    }
    if (this.count >= OBSERVER_LIMITS.total) return { code: 'too_many_observers', message: `The engine holds ${OBSERVER_LIMITS.total} observers, the most it may` };
    return null;
  }

  private targetPresent(o: Observer): boolean {
    return this.registry.resolve(o.target.function_id, o.target.namespace) !== undefined;
  }

  /** Functions came or went: pending observers whose target is there turn active; active ones whose target left, suspended. */
  private retarget(): void {
    for (const mine of this.byOwner.values()) {
      for (const o of mine.values()) {
        const present = this.targetPresent(o);
        if (o.state !== 'active' && present) {
          o.state = 'active';
          this.changed(o);
          this.drain(o);
        } else if (o.state === 'active' && !present) {
          o.state = 'suspended';
          this.changed(o, { code: 'target_unavailable', message: `Observer ${o.id}: its target ${o.target.function_id} is not registered` });
        }
      }
    }
  }

  private dispose(o: Observer, reason: ErrorBody): void {
    if (o.state === 'disposed') return;
    this.remove(o);
    o.state = 'disposed';
    this.changed(o, reason);
  }

  private remove(o: Observer): void {
    if (o.timer) clearTimeout(o.timer);
    o.queue = [];
    o.queuedBytes = 0;
    const mine = this.byOwner.get(o.owner);
    if (mine?.get(o.id) === o) {
      mine.delete(o.id);
      this.count--;
      if (mine.size === 0) this.byOwner.delete(o.owner);
    }
    const set = this.watched.get(o.key);
    if (set?.delete(o) && set.size === 0) this.watched.delete(o.key);
    o.state = 'disposed';
  }

  private result(o: Observer): void {
    o.owner.sendText(JSON.stringify({ type: 'observeresult', id: o.id, state: o.state }));
  }

  private changed(o: Observer, reason?: ErrorBody): void {
    o.owner.sendText(JSON.stringify({ type: 'observerstatechanged', id: o.id, state: o.state, fires: o.fires, ...(reason ? { reason } : {}) }));
  }
}
