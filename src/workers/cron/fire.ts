/**
 * One fire of a schedule: its record, the call of the bound function (or its enqueue on svc-queue),
 * and the outcome written back to the store. Every call svc-cron makes for a binding goes through
 * `callForBinding`, which names the binding (`bindingId`): the engine runs the call with the
 * binder's rights, never svc-cron's (docs/security.md, "Trigger bindings"). The binding must be one
 * this process holds now: the engine accepts the id only from the binding's provider.
 */
import { randomUUID } from 'node:crypto';
import type { CallRequest, Logger, Worker } from 'svc-sdk';
import type { Schedule } from './schedule.js';
import type { CronStore, FireRecord, StartOutcome, StartRequest } from './store.js';

/** A run stays marked as running this long past its call's deadline (the engine answers by then). */
const DEADLINE_SLACK_MS = 2_000;
/** Error messages kept in a record are cut here, so a record stays small whatever a handler throws. */
const MAX_MESSAGE_CHARS = 1_000;

const NO_QUEUE_PROVIDER = /no queue provider is registered/;

/** What the bound function receives. */
export interface FirePayload {
  trigger_id: string;
  schedule_id: string;
  scheduled_time: string;
  actual_time: string;
  manual: boolean;
  payload: unknown;
  /** iii's names for the same: `trigger: "cron"`, `job_id` = trigger_id. */
  trigger: 'cron';
  job_id: string;
}

export interface RunOutcome {
  record: FireRecord;
  /** The function's result (or the queue's receipt) when the run succeeded. */
  result?: unknown;
}

/** The binding a call is made for. */
export interface BindingRef {
  trigger_id: string;
  function_id: string;
}

export function callForBinding(worker: Worker, binding: BindingRef, req: Omit<CallRequest, 'function_id' | 'bindingId'>): Promise<unknown> {
  return worker.trigger({ ...req, function_id: binding.function_id, bindingId: binding.trigger_id });
}

export interface Fire {
  schedule: Schedule;
  /** The binding the fire is made for: one this process holds. */
  trigger_id: string;
  scheduled_time: number;
  manual: boolean;
}

export class Firer {
  constructor(
    private readonly worker: Worker,
    private readonly store: CronStore,
    readonly holderId: string,
    private readonly log: Logger,
  ) {}

  /** The start request of a fire about to happen now; `record` has outcome `running`. */
  startRequest(f: Fire, now = Date.now()): StartRequest {
    const runId = randomUUID();
    const record: FireRecord = {
      run_id: runId,
      trigger_id: f.trigger_id,
      scheduled_time: new Date(f.scheduled_time).toISOString(),
      actual_time: new Date(now).toISOString(),
      manual: f.manual,
      outcome: 'running',
    };
    return {
      scheduled_time: f.scheduled_time,
      run_id: runId,
      holder_id: this.holderId,
      now,
      until: now + f.schedule.def.timeout_ms + DEADLINE_SLACK_MS,
      skip_while_running: f.schedule.def.overlap === 'skip',
      honor_pause: !f.manual,
      record,
    };
  }

  /** Start (unless the store already did, in the claim) and run; the outcome is recorded. Never throws. */
  async run(f: Fire, req: StartRequest, started?: StartOutcome | null, parent?: CallRequest['parent']): Promise<RunOutcome> {
    let outcome: StartOutcome;
    try {
      outcome = started ?? (await this.store.start(f.schedule.id, req));
    } catch (e) {
      const err = e as Error & { code?: string };
      this.log.error(`schedule ${f.schedule.id} (${f.schedule.def.function_id}): cannot start the run of ${req.record.scheduled_time}: ${err.message}`);
      return { record: { ...req.record, run_id: null, outcome: 'error', error: { code: err.code ?? 'store_unavailable', message: err.message } } };
    }
    if (outcome !== 'fire') {
      this.log.debug(`schedule ${f.schedule.id} (${f.schedule.def.function_id}): fire of ${req.record.scheduled_time} ${outcome === 'paused' ? 'skipped: paused' : 'skipped: the previous run is still running'}`);
      return { record: { ...req.record, run_id: null, outcome } };
    }
    const t0 = Date.now();
    const done = (extra: Pick<FireRecord, 'outcome' | 'error' | 'note'>): FireRecord & { run_id: string } => ({
      ...req.record,
      ...extra,
      run_id: req.run_id,
      finished_at: new Date().toISOString(),
      duration_ms: Date.now() - t0,
    });
    let out: RunOutcome;
    try {
      const { result, note } = await this.call(f, req.record, parent);
      out = { record: done(note ? { outcome: 'ok', note } : { outcome: 'ok' }), result };
    } catch (e) {
      const err = e as Error & { code?: unknown };
      const code = typeof err.code === 'string' ? err.code : 'invocation_failed';
      out = { record: done({ outcome: 'error', error: { code, message: String(err.message).slice(0, MAX_MESSAGE_CHARS) } }) };
      this.log.warn(`schedule ${f.schedule.id} (${f.schedule.def.function_id}): run of ${req.record.scheduled_time} failed: ${code}: ${err.message}`);
    }
    try {
      await this.store.finish(f.schedule.id, out.record as FireRecord & { run_id: string });
    } catch (e) {
      this.log.error(`schedule ${f.schedule.id}: cannot record the outcome of ${req.record.scheduled_time}: ${(e as Error).message}`);
    }
    return out;
  }

  /** Enqueue on the schedule's queue when it has one and svc-queue runs, else call directly. */
  private async call(f: Fire, record: FireRecord, parent: CallRequest['parent']): Promise<{ result: unknown; note?: string }> {
    const def = f.schedule.def;
    const payload: FirePayload = {
      trigger_id: f.trigger_id,
      schedule_id: f.schedule.id,
      scheduled_time: record.scheduled_time,
      actual_time: record.actual_time,
      manual: f.manual,
      payload: def.payload,
      trigger: 'cron',
      job_id: f.trigger_id,
    };
    const binding = { trigger_id: f.trigger_id, function_id: def.function_id };
    const common = { payload, timeoutMs: def.timeout_ms, ...(parent ? { parent } : {}) };
    if (def.queue !== null) {
      try {
        const receipt = await callForBinding(this.worker, binding, { ...common, action: { type: 'enqueue', queue: def.queue } });
        return { result: receipt, note: `enqueued on queue ${def.queue}` };
      } catch (e) {
        // No svc-queue runs (the engine's enqueue_error, src/engine/errors.ts): nothing was enqueued,
        // so the function is called directly and the fire is not lost. svc-queue's own refusals
        // (an unconfigured queue, a payload too large) share the code, iii's, but not the words:
        // those are the run's outcome, as a typo in a queue name must not go unnoticed.
        const err = e as { code?: string; message?: string };
        if (err.code !== 'enqueue_error' || !NO_QUEUE_PROVIDER.test(err.message ?? '')) throw e;
        const note = `queue ${def.queue} unavailable (${(e as Error).message}): called directly`;
        this.log.warn(`schedule ${f.schedule.id} (${def.function_id}): ${note}`);
        return { result: await callForBinding(this.worker, binding, common), note };
      }
    }
    return { result: await callForBinding(this.worker, binding, common) };
  }
}
