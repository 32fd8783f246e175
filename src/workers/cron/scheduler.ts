/**
 * The `cron` bindings this svc-cron process holds, grouped into schedules (one timer per schedule
 * however many bindings share it), within the process's budgets, and this process's heartbeat in
 * the store: its liveness (a run it started counts as running only while it lives) and the list of
 * its bindings, which `cron::list` on any replica reads.
 */
import { randomUUID } from 'node:crypto';
import type { Logger, TriggerBinding } from 'svc-sdk';
import type { CronConfig } from './config.js';
import { CronError } from './errors.js';
import { Firer } from './fire.js';
import { ScheduleRunner } from './runner.js';
import { parseSchedule } from './schedule.js';
import type { CronStore } from './store.js';

/**
 * A holder that has not renewed for this long is gone, and so are its runs: when svc-cron dies the
 * engine cancels the calls it made, so with `overlap: skip` a run of a killed svc-cron holds up the
 * schedule's next fires for at most this long.
 */
export const HOLDER_TTL_MS = 3_000;
const HEARTBEAT_MS = 1_000;
/** Every this many heartbeats the binding list is written again, even unchanged (self-healing). */
const BINDINGS_EVERY = 30;

interface Held {
  runner: ScheduleRunner;
  /** trigger id → bytes of its config */
  bindings: Map<string, number>;
}

export class Scheduler {
  readonly holderId = randomUUID();
  readonly firer: Firer;
  private readonly schedules = new Map<string, Held>();
  private readonly scheduleOf = new Map<string, string>();
  private totalBytes = 0;
  private beatTimer: NodeJS.Timeout | undefined;
  private beats = 0;
  private bindingsChanged = true;
  private closed = false;

  constructor(
    private readonly store: CronStore,
    worker: ConstructorParameters<typeof Firer>[0],
    private readonly workerName: string,
    private readonly config: CronConfig,
    private readonly log: Logger,
  ) {
    this.firer = new Firer(worker, store, this.holderId, log);
  }

  /** The first heartbeat (before any binding is accepted), then one every HEARTBEAT_MS. */
  async begin(): Promise<void> {
    await this.beat();
  }

  /** Accept a binding, or throw a CronError that refuses it (svc-sdk sends its code to the binder). */
  add(b: TriggerBinding): void {
    const where = `cron trigger ${b.id} for ${b.function_id}`;
    if (this.scheduleOf.size >= this.config.maxTriggers) {
      throw new CronError('too_many_triggers', `${where}: this svc-cron already holds ${this.scheduleOf.size} bindings (max_triggers)`);
    }
    const bytes = Buffer.byteLength(JSON.stringify(b.config ?? null), 'utf8');
    if (bytes > this.config.maxTriggerBytes) {
      throw new CronError('trigger_config_too_large', `${where}: config is ${bytes} bytes of JSON; the limit (max_trigger_bytes) is ${this.config.maxTriggerBytes}`);
    }
    if (this.totalBytes + bytes > this.config.maxTotalBytes) {
      throw new CronError('trigger_config_too_large', `${where}: the bindings held would take ${this.totalBytes + bytes} bytes of config; the limit (max_total_bytes) is ${this.config.maxTotalBytes}`);
    }
    const schedule = parseSchedule(b.function_id, b.config, where);
    this.remove(b.id);
    let held = this.schedules.get(schedule.id);
    if (!held) {
      const bindings = new Map<string, number>();
      const runner = new ScheduleRunner(schedule, this.store, this.firer, this.log, this.config, () => bindings.keys().next().value);
      held = { runner, bindings };
      this.schedules.set(schedule.id, held);
      held.bindings.set(b.id, bytes);
      void runner.start();
    } else {
      held.bindings.set(b.id, bytes);
    }
    this.scheduleOf.set(b.id, schedule.id);
    this.totalBytes += bytes;
    this.changed();
  }

  /** Whether this process holds binding `triggerId` now (the engine handed it here and did not take it back). */
  holds(triggerId: string): boolean {
    return this.scheduleOf.has(triggerId);
  }

  remove(triggerId: string): void {
    const id = this.scheduleOf.get(triggerId);
    if (id === undefined) return;
    this.scheduleOf.delete(triggerId);
    const held = this.schedules.get(id)!;
    this.totalBytes -= held.bindings.get(triggerId) ?? 0;
    held.bindings.delete(triggerId);
    if (held.bindings.size === 0) {
      held.runner.stop();
      this.schedules.delete(id);
    }
    this.changed();
  }

  /** Stop every timer, let runs in flight finish (up to graceMs) and leave the store's holder list. */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    clearTimeout(this.beatTimer);
    const runs: Promise<unknown>[] = [];
    for (const held of this.schedules.values()) {
      held.runner.stop();
      runs.push(...held.runner.running);
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(runs), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.schedules.clear();
    this.scheduleOf.clear();
    await this.store.removeHolder(this.holderId).catch((e: Error) => this.log.warn(`svc-cron: cannot leave the holder list: ${e.message}`));
  }

  private changed(): void {
    if (this.bindingsChanged) return;
    this.bindingsChanged = true;
    // Published at the end of this turn: a burst of bindings (a replayed worker) is one write.
    setImmediate(() => void this.beat());
  }

  private async beat(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.beatTimer);
    const full = this.bindingsChanged || ++this.beats % BINDINGS_EVERY === 0;
    this.bindingsChanged = false;
    const list = full ? [...this.scheduleOf.entries()] : undefined;
    try {
      await this.store.heartbeat(this.holderId, this.workerName, Date.now() + HOLDER_TTL_MS, list);
    } catch (e) {
      if (full) this.bindingsChanged = true;
      this.log.error(`svc-cron: heartbeat failed: ${(e as Error).message}`);
    }
    if (!this.closed) this.beatTimer = setTimeout(() => void this.beat(), HEARTBEAT_MS);
  }
}
