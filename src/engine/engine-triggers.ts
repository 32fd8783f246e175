/**
 * The trigger types the engine provides itself, as iii's engine does (npm iii-sdk `EngineTriggers`):
 *
 * - `engine::functions-available` (config `{}`): fires `{event: "functions_changed", functions}`
 *   (the list `engine::functions::list` answers) when the set of function ids changed; checked
 *   every `pollMs` while something is bound (iii polls every 5 s).
 * - `log` (config `{level?}`, a minimum level: debug, info, warn, error): fires each new log line
 *   as iii's `OtelLogEvent` (@iii-dev/helpers/observability), except the lines of the bound function
 *   itself and the lines a `log` fire caused (see MAX_FIRED_TRACES).
 *
 * The provider is a Peer of the engine's own: the triggers table hands it bindings like any
 * provider's, and it fires through the router as a provider does (`binding_id`, fire-and-forget),
 * so a fired call runs with the binder's rights. Binding needs the right to call what the events
 * reveal (`engine::functions::list`, `engine::logs::list`). Fires are bounded: at most
 * MAX_LINES_PER_TURN log lines per binding and MAX_FIRES_PER_TURN fires in all per event-loop turn;
 * the rest are dropped.
 */
import type { Message, RegisterTriggerMsg, TriggerRegistrationResultMsg } from 'svc-sdk/protocol';
import { traceIdOfTraceparent, traceparentMaker } from 'svc-sdk/internal';
import type { Call } from './call.js';
import type { LogRing } from './hot/log-ring.js';
import { levelIndex, type LogEntry } from './logs.js';
import { Peer } from './peer.js';
import type { Triggers } from './triggers.js';

export const FUNCTIONS_AVAILABLE = 'engine::functions-available';
export const LOG_TRIGGER = 'log';
/** Log lines fired per binding in one turn; more are dropped (a flood must not become a flood of calls). */
export const MAX_LINES_PER_TURN = 1000;
/**
 * Log fires in one turn, all bindings together; the rest are dropped. A worker may hold thousands of
 * bindings (max_registrations_per_worker), and lines × bindings fires in one turn held the event
 * loop for seconds (2,000 bindings × 100 lines: 5 s) and would for minutes at the limits.
 */
export const MAX_FIRES_PER_TURN = 10_000;
/**
 * Each `log` fire starts a trace of its own, remembered (the newest this many), and a line in such a
 * trace fires nothing: lines that log handlers cause, directly or through the calls they make, are
 * not fired again, nor the engine's line that a fire failed. Excluding only the bound function's
 * own lines left two log handlers that log, or one that fails (the engine logs a failed fire), firing
 * each other or itself 1,000 times a turn for as long as they were bound.
 */
export const MAX_FIRED_TRACES = 10_000;

/** OTLP severity numbers of the engine's levels (iii's Logger uses these). */
const SEVERITY = { debug: 5, info: 9, warn: 13, error: 17 } as const;

export interface EngineTriggerDeps {
  triggers: Triggers;
  logs: LogRing;
  /** Hand a frame to the router as this peer's (router.onFrame). */
  deliver(from: Peer, msg: Message): void;
  /** What `engine::functions::list` answers (the functions event's payload). */
  functions(): Promise<unknown>;
  /** The function ids registered now, as one comparable text. */
  functionIds(): string;
  pollMs?: number;
}

interface Bound {
  id: string;
  functionId: string;
  /** log: the minimum level index. */
  minLevel: number;
}

/** The provider's name as a peer (in listings of trigger types). */
const PROVIDER_NAME = 'engine';

export class EngineTriggerProvider extends Peer {
  readonly node = undefined;
  private running = true;
  private readonly functionBindings = new Map<string, Bound>();
  private readonly logBindings = new Map<string, Bound>();
  private functionsSeen = '';
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private pending: LogEntry[] = [];
  private flushQueued = false;
  /** The traces `log` fires started, oldest first (a Set keeps insertion order). */
  private readonly firedTraces = new Set<string>();
  /** A log fire's traceparent: a trace of its own (a random prefix and a counter), naming no parent. */
  private readonly newTraceparent = traceparentMaker();

  constructor(private readonly deps: EngineTriggerDeps) {
    super(PROVIDER_NAME);
    deps.triggers.registerType(this, {
      type: 'registertriggertype',
      id: FUNCTIONS_AVAILABLE,
      description: 'Fires {event: "functions_changed", functions} when the registered functions change',
      binding_requires_call: ['engine::functions::list'],
    });
    deps.triggers.registerType(this, {
      type: 'registertriggertype',
      id: LOG_TRIGGER,
      description: 'Fires each new log line (iii OtelLogEvent); config {level?}: the minimum level',
      binding_requires_call: ['engine::logs::list'],
    });
  }

  get open(): boolean {
    return this.running;
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
  }

  /** The triggers table speaks to a provider in frames: bindings handed over or taken back. */
  sendText(text: string): void {
    const m = JSON.parse(text) as Message;
    if (m.type === 'registertrigger') this.bind(m);
    else if (m.type === 'unregistertrigger') this.unbind(m.id);
  }

  sendCall(_call: Call, _frame: string): void {
    // It registers no functions, so no call is routed to it.
  }

  private bind(m: RegisterTriggerMsg): void {
    const config = (typeof m.config === 'object' && m.config !== null ? m.config : {}) as Record<string, unknown>;
    let minLevel = 0;
    if (m.trigger_type === LOG_TRIGGER && config.level != null) {
      const level = levelIndex(typeof config.level === 'string' ? config.level.toLowerCase() : config.level);
      if (level === undefined) {
        return this.answer(m, { code: 'trigger_registration_failed', message: `log trigger ${m.id}: "level" must be one of debug, info, warn, error; got ${JSON.stringify(config.level)}` });
      }
      minLevel = level;
    }
    const bound: Bound = { id: m.id, functionId: m.function_id, minLevel };
    if (m.trigger_type === LOG_TRIGGER) this.logBindings.set(m.id, bound);
    else this.functionBindings.set(m.id, bound);
    this.answer(m);
    this.watch();
  }

  private unbind(id: string): void {
    this.functionBindings.delete(id);
    this.logBindings.delete(id);
    this.watch();
  }

  private answer(m: RegisterTriggerMsg, error?: { code: string; message: string }): void {
    const msg: TriggerRegistrationResultMsg = { type: 'triggerregistrationresult', id: m.id, trigger_type: m.trigger_type, function_id: m.function_id, ...(error ? { error } : {}) };
    this.deps.triggers.result(this, msg);
  }

  /** Poll and listen only while something is bound. */
  private watch(): void {
    if (!this.running) return;
    if (this.functionBindings.size > 0 && !this.timer) {
      this.functionsSeen = this.deps.functionIds();
      this.timer = setInterval(() => this.checkFunctions(), this.deps.pollMs ?? 5000);
      this.timer.unref();
    } else if (this.functionBindings.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    if (this.logBindings.size > 0 && !this.unsubscribe) {
      this.unsubscribe = this.deps.logs.subscribe((e) => this.onLine(e));
    } else if (this.logBindings.size === 0 && this.unsubscribe) {
      this.unsubscribe();
      this.unsubscribe = undefined;
      this.pending = [];
    }
  }

  private checkFunctions(): void {
    const now = this.deps.functionIds();
    if (now === this.functionsSeen) return;
    this.functionsSeen = now;
    this.deps.functions().then(
      (functions) => {
        const data = { event: 'functions_changed', functions };
        for (const b of this.functionBindings.values()) this.fire(b, data);
      },
      () => {}, // the engine stopping: nothing to tell
    );
  }

  /** Lines come from inside LogRing.add: fired on the next turn, in order, bounded. */
  private onLine(e: LogEntry): void {
    if (this.pending.length >= MAX_LINES_PER_TURN || this.causedByLogFire(e)) return;
    this.pending.push(e);
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      const lines = this.pending;
      this.pending = [];
      // Line by line, each to every binding: a turn over MAX_FIRES_PER_TURN keeps its first lines.
      let fires = 0;
      for (const line of lines) {
        const level = levelIndex(line.level) ?? 0;
        for (const b of this.logBindings.values()) {
          if (line.function_id === b.functionId || level < b.minLevel) continue;
          if (++fires > MAX_FIRES_PER_TURN) return;
          this.fire(b, otelLogEvent(line), this.logFireTraceparent());
        }
      }
    });
  }

  /** A line logged in a trace a log fire started, or the engine's line that one of its fires failed. */
  private causedByLogFire(e: LogEntry): boolean {
    if (e.trace_id !== undefined && this.firedTraces.has(e.trace_id)) return true;
    return e.source === 'engine' && typeof e.data === 'object' && e.data !== null && (e.data as Record<string, unknown>).caller_worker_id === this.id;
  }

  /** A new trace for a log fire, remembered so that the lines logged in it fire nothing. */
  private logFireTraceparent(): string {
    const traceparent = this.newTraceparent();
    this.firedTraces.add(traceIdOfTraceparent(traceparent)!);
    if (this.firedTraces.size > MAX_FIRED_TRACES) this.firedTraces.delete(this.firedTraces.values().next().value!);
    return traceparent;
  }

  private fire(b: Bound, data: unknown, traceparent?: string): void {
    if (!this.running) return;
    this.deps.deliver(this, { type: 'invokefunction', function_id: b.functionId, data, binding_id: b.id, action: { type: 'void' }, ...(traceparent ? { traceparent } : {}) });
  }
}

/** A log line as iii's `OtelLogEvent`. */
export function otelLogEvent(e: LogEntry): Record<string, unknown> {
  const nanos = BigInt(Date.parse(e.time)) * 1_000_000n;
  const service = e.worker_name ?? (e.source === 'engine' ? 'engine' : 'unknown');
  const attributes: Record<string, unknown> = {};
  if (e.data !== undefined) attributes['log.data'] = e.data;
  if (e.function_id !== undefined) attributes['function_id'] = e.function_id;
  if (e.invocation_id !== undefined) attributes['invocation_id'] = e.invocation_id;
  if (e.worker_id !== undefined) attributes['worker_id'] = e.worker_id;
  return {
    timestamp_unix_nano: Number(nanos),
    observed_timestamp_unix_nano: Number(nanos),
    severity_number: SEVERITY[e.level],
    severity_text: e.level.toUpperCase(),
    body: e.message,
    attributes,
    ...(e.trace_id !== undefined ? { trace_id: e.trace_id } : {}),
    resource: { 'service.name': service },
    service_name: service,
  };
}
