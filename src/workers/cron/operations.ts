/**
 * `cron::list`, `cron::pause`, `cron::resume`, `cron::run_now`. Any replica of svc-cron answers
 * them, whether or not it holds the schedule's bindings: everything they need is in the store (the
 * bindings every live svc-cron holds, each schedule's definition and record). A run is the one
 * exception: it is a call made for a binding, which only the process holding it may make, so a
 * replica holding none of the schedule's bindings passes `cron::run_now` on to one that does, through
 * that process's own `cron::run_now::<holder id>`.
 */
import type { CallRequest, InvocationContext } from 'svc-sdk';
import { CronError, shown } from './errors.js';
import type { Firer } from './fire.js';
import { nextTimes, SCHEDULE_ID, scheduleOf } from './schedule.js';
import type { CronStore, FireRecord, HeldBinding, ScheduleCounts, ScheduleState } from './store.js';

export interface ScheduleView {
  schedule_id: string;
  function_id: string;
  expression: string;
  timezone: string;
  overlap: string;
  catch_up: string;
  queue: string | null;
  payload: unknown;
  timeout_ms: number;
  trigger_ids: string[];
  /** Names of the svc-cron processes holding its bindings. */
  held_by: string[];
  paused: boolean;
  running: boolean;
  next_fires: string[];
  last_fire: FireRecord | null;
  last_result: FireRecord | null;
  counts: ScheduleCounts;
}

export interface RunNowResult {
  schedule_id: string;
  trigger_id: string;
  run_id: string | null;
  outcome: FireRecord['outcome'];
  result?: unknown;
  error?: { code: string; message: string };
  duration_ms?: number;
  note?: string;
}

export const OPERATION_DESCRIPTIONS = {
  'cron::list': 'Every schedule bound to a cron trigger: its next 3 fire times, last fire and outcome, paused. Payload {function_id?}',
  'cron::pause': 'Pause a schedule: its fire times pass without running until cron::resume. Payload {schedule_id} or {trigger_id}',
  'cron::resume': 'Resume a paused schedule (missed fire times are not caught up). Payload {schedule_id} or {trigger_id}',
  'cron::run_now': 'Run a schedule once now, as a fire with manual: true; answers with the outcome. Payload {schedule_id} or {trigger_id}',
} as const;

type Obj = Record<string, unknown>;

function payloadOf(fn: string, data: unknown): Obj {
  if (data === undefined || data === null) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new CronError('invalid_payload', `${fn}: payload must be an object, got ${shown(data)}`);
  return data as Obj;
}

function optionalString(fn: string, o: Obj, field: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw new CronError('invalid_payload', `${fn}: "${field}" must be a non-empty string, got ${shown(v)}`);
  return v;
}

/** What cron::run_now needs of the svc-cron process it runs in. */
export interface RunPlace {
  /** Whether this process holds binding `triggerId` now. */
  holds(triggerId: string): boolean;
  /** Have the svc-cron process `holderId`, which holds binding `req.trigger_id`, run it. */
  forward(holderId: string, req: { trigger_id: string }, parent: CallRequest['parent'], timeoutMs: number): Promise<RunNowResult>;
}

export function cronOperations(store: CronStore, firer: Firer, place: RunPlace) {
  const isRunning = (s: ScheduleState, now: number) => s.run !== null && s.run.until > now;

  /** The schedule a payload names ({schedule_id} or {trigger_id}), its state and live bindings. */
  const resolve = async (fn: string, data: unknown): Promise<{ state: ScheduleState; held: HeldBinding[] }> => {
    const o = payloadOf(fn, data);
    const sid = optionalString(fn, o, 'schedule_id');
    const tid = optionalString(fn, o, 'trigger_id');
    if ((sid === undefined) === (tid === undefined)) throw new CronError('invalid_payload', `${fn}: give exactly one of "schedule_id" (from cron::list) and "trigger_id"`);
    // Every schedule id is scheduleId()'s 16 hex digits: anything else names none, and must not
    // reach the store (lmdb refuses a key of tens of kilobytes with a RangeError).
    if (sid !== undefined && !SCHEDULE_ID.test(sid)) throw new CronError('schedule_not_found', `${fn}: no schedule has id ${shown(sid)} (cron::list shows them)`);
    const bindings = await store.liveBindings(Date.now());
    const id = sid ?? bindings.find((b) => b.trigger_id === tid)?.schedule_id;
    if (id === undefined) throw new CronError('schedule_not_found', `${fn}: no live cron trigger has id ${shown(tid)} (cron::list shows them)`);
    const state = (await store.get([id])).get(id);
    if (!state?.def) throw new CronError('schedule_not_found', `${fn}: no schedule has id ${shown(id)} (cron::list shows them)`);
    return { state, held: bindings.filter((b) => b.schedule_id === id) };
  };

  const setPaused = async (fn: string, data: unknown, paused: boolean) => {
    const { state } = await resolve(fn, data);
    const after = await store.setPaused(state.schedule_id, paused);
    if (!after) throw new CronError('schedule_not_found', `${fn}: schedule ${state.schedule_id} is gone`);
    return { schedule_id: after.schedule_id, function_id: after.def?.function_id ?? null, paused: after.paused };
  };

  /**
   * A manual fire, made for a binding of the schedule this process holds; else (`passOn`) by the
   * process holding one. The caller needs only the right to call cron::run_now: the fire is the
   * schedule's own (its function, its payload), run with its binder's rights.
   */
  const runNow = async (fn: string, data: unknown, ctx: Pick<InvocationContext, 'traceparent' | 'baggage'>, passOn: boolean): Promise<RunNowResult> => {
    const { state, held } = await resolve(fn, data);
    const asked = optionalString(fn, payloadOf(fn, data), 'trigger_id');
    const candidates = held.filter((b) => asked === undefined || b.trigger_id === asked).sort((a, b) => a.trigger_id.localeCompare(b.trigger_id));
    const parent: CallRequest['parent'] = { traceparent: ctx.traceparent, baggage: ctx.baggage };
    const mine = candidates.find((b) => b.holder_id === firer.holderId && place.holds(b.trigger_id));
    if (!mine) {
      const other = passOn ? candidates.find((b) => b.holder_id !== firer.holderId) : undefined;
      if (other) return place.forward(other.holder_id, { trigger_id: other.trigger_id }, parent, state.def!.timeout_ms);
      throw new CronError(
        'schedule_not_found',
        passOn ? `${fn}: schedule ${state.schedule_id} has no live cron trigger (its worker is not running)` : `${fn}: this svc-cron process holds no live cron trigger of schedule ${state.schedule_id} any more`,
      );
    }
    const tid = mine.trigger_id;
    const fire = { schedule: scheduleOf(state.schedule_id, state.def!), trigger_id: tid, scheduled_time: Date.now(), manual: true };
    const { record, result } = await firer.run(fire, firer.startRequest(fire), undefined, parent);
    return {
      schedule_id: state.schedule_id,
      trigger_id: tid,
      run_id: record.run_id,
      outcome: record.outcome,
      ...(record.outcome === 'ok' ? { result } : {}),
      ...(record.error ? { error: record.error } : {}),
      ...(record.duration_ms !== undefined ? { duration_ms: record.duration_ms } : {}),
      ...(record.note ? { note: record.note } : {}),
    };
  };

  const ops = {
    'cron::list': async (data: unknown): Promise<{ schedules: ScheduleView[] }> => {
      const fnFilter = optionalString('cron::list', payloadOf('cron::list', data), 'function_id');
      const now = Date.now();
      const held = await store.liveBindings(now);
      const bySchedule = new Map<string, HeldBinding[]>();
      for (const b of held) {
        const list = bySchedule.get(b.schedule_id) ?? [];
        list.push(b);
        bySchedule.set(b.schedule_id, list);
      }
      const states = await store.get([...bySchedule.keys()]);
      const out: ScheduleView[] = [];
      for (const [id, bindings] of bySchedule) {
        const s = states.get(id);
        if (!s?.def) continue;
        const def = s.def;
        if (fnFilter !== undefined && def.function_id !== fnFilter) continue;
        let next: string[] = [];
        try {
          next = nextTimes(scheduleOf(id, def).cron, now, 3).map((t) => new Date(t).toISOString());
        } catch {
          // A definition that no longer fires: listed with no next time.
        }
        out.push({
          schedule_id: id,
          ...def,
          trigger_ids: [...new Set(bindings.map((b) => b.trigger_id))].sort(),
          held_by: [...new Set(bindings.map((b) => b.worker))].sort(),
          paused: s.paused,
          running: isRunning(s, now),
          next_fires: next,
          last_fire: s.last,
          last_result: s.last_result,
          counts: s.counts,
        });
      }
      out.sort((a, b) => a.function_id.localeCompare(b.function_id) || a.expression.localeCompare(b.expression) || a.schedule_id.localeCompare(b.schedule_id));
      return { schedules: out };
    },

    'cron::pause': (data: unknown) => setPaused('cron::pause', data, true),
    'cron::resume': (data: unknown) => setPaused('cron::resume', data, false),

    'cron::run_now': (data: unknown, ctx: Pick<InvocationContext, 'traceparent' | 'baggage'>): Promise<RunNowResult> => runNow('cron::run_now', data, ctx, true),
  };
  /** Registered as runHereId(this process's holder id): runs only a binding this process holds, never passes it on. */
  const runHere = (data: unknown, ctx: Pick<InvocationContext, 'traceparent' | 'baggage'>): Promise<RunNowResult> => runNow('cron::run_now', data, ctx, false);
  return { ops, runHere };
}

export type CronOperations = ReturnType<typeof cronOperations>;

/** The function through which svc-cron process `holderId` runs, for cron::run_now, a schedule whose binding it holds. */
export function runHereId(holderId: string): string {
  return `cron::run_now::${holderId}`;
}

export const RUN_HERE_DESCRIPTION =
  'cron::run_now, in this svc-cron process: the one holding the binding {trigger_id}. cron::run_now passes a run on here when the process it reached holds no binding of the schedule.';
