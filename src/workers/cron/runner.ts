/**
 * The timer of one schedule in one svc-cron process, from the moment it holds a binding of it.
 *
 * At start it works out what was missed while no svc-cron ran it (since the schedule's last
 * accounted time, within the catch-up window) and applies the schedule's `catch_up` to those; then
 * it sleeps until each fire time and claims it. Every claim goes through the store, so it does not
 * matter how many processes run a timer for the schedule: each time is claimed once (store.ts).
 *
 * On time or missed: a time is fired as scheduled when it is at most LATE_MS old when handled;
 * older ones were missed (svc-cron or the engine was down, or the process stalled) and follow
 * `catch_up`. A process that just took the schedule over therefore still fires a time another
 * process was about to claim, if no one did.
 */
import type { Logger } from 'svc-sdk';
import type { Fire, Firer } from './fire.js';
import { timesBetween, type Schedule } from './schedule.js';
import type { CronStore } from './store.js';

/** How late a fire may be handled and still count as on time. */
export const LATE_MS = 1_000;
/** The longest a timer sleeps: wall-clock changes and very distant times are picked up by waking. */
const MAX_SLEEP_MS = 60_000;
/** After a failed claim (store unreachable), try again this soon. */
const RETRY_MS = 1_000;

export interface RunnerLimits {
  maxCatchUpFires: number;
  catchUpWindowMs: number;
}

export class ScheduleRunner {
  /** Every time up to here has been handled (claimed, or found claimed). */
  private cursor = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Catch-up runs of this schedule, one after another. */
  private catchUp: Promise<void> = Promise.resolve();
  /** Runs started by this runner and not finished: close() waits for them. */
  readonly running = new Set<Promise<unknown>>();

  constructor(
    readonly schedule: Schedule,
    private readonly store: CronStore,
    private readonly firer: Firer,
    private readonly log: Logger,
    private readonly limits: RunnerLimits,
    /** The binding the fires are made for: a live one this process holds (its first), if any. */
    private readonly triggerId: () => string | undefined,
  ) {}

  async start(): Promise<void> {
    const now = Date.now();
    let state;
    try {
      state = await this.store.register(this.schedule.id, this.schedule.def, now);
    } catch (e) {
      this.log.error(`schedule ${this.schedule.id} (${this.schedule.def.function_id}): cannot read its record, retrying: ${(e as Error).message}`);
      if (!this.stopped) this.timer = setTimeout(() => void this.start(), RETRY_MS);
      return;
    }
    if (this.stopped) return;
    this.cursor = Math.max(state.last_time ?? state.created_at, now - this.limits.catchUpWindowMs);
    await this.tick(now, false);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private arm(): void {
    if (this.stopped) return;
    const next = this.schedule.cron.nextRun(new Date(this.cursor));
    if (!next) {
      this.log.info(`schedule ${this.schedule.id} (${this.schedule.def.function_id}): no fire time is left`);
      return;
    }
    const delay = Math.min(Math.max(next.getTime() - Date.now(), 0), MAX_SLEEP_MS);
    this.timer = setTimeout(() => void this.tick(), delay);
  }

  /**
   * Claim the times in (cursor, now], then sleep until the next. The cursor moves only when the
   * store answered; after a failure the same times are offered again a moment later (by then
   * late, so they follow catch_up).
   */
  private async tick(now = Date.now(), regular = true): Promise<void> {
    if (this.stopped) return;
    const { times, more } = timesBetween(this.schedule.cron, this.cursor, now, this.limits.maxCatchUpFires);
    if (times.length > 0) {
      const onTime = times.filter((t) => now - t <= LATE_MS);
      // A timer that woke late (a stalled process) still fires its latest time.
      if (regular && onTime.length === 0) onTime.push(times[times.length - 1]!);
      const missed = times.filter((t) => !onTime.includes(t));
      try {
        if (missed.length > 0) await this.claimMissed(missed, more);
        for (const t of onTime) await this.fire(t);
      } catch (e) {
        this.log.error(`schedule ${this.schedule.id} (${this.schedule.def.function_id}): cannot claim ${new Date(times[0]!).toISOString()}, retrying: ${(e as Error).message}`);
        if (!this.stopped) this.timer = setTimeout(() => void this.tick(), RETRY_MS);
        return;
      }
    }
    this.cursor = Math.max(this.cursor, now);
    this.arm();
  }

  private async claimMissed(missed: number[], more: boolean): Promise<void> {
    const def = this.schedule.def;
    const r = await this.store.advance(this.schedule.id, { times: missed, policy: def.catch_up });
    if (r.run.length === 0 && r.missed === 0) return; // another process had them
    const what = `${r.missed + r.run.length}${more ? '+' : ''} missed fire(s), the latest ${new Date(missed[missed.length - 1]!).toISOString()}`;
    this.log.warn(`schedule ${this.schedule.id} (${def.function_id}): ${what}; catch_up ${def.catch_up}: running ${r.run.length}`);
    for (const t of r.run) {
      // One after another: with overlap skip, concurrent catch-up runs would skip each other.
      // Claimed already, so they run even if this runner stops meanwhile.
      this.catchUp = this.catchUp.then(async () => {
        const f = this.fireOf(t);
        // Its bindings all left meanwhile: no one may be called for it (at most once, as a fire
        // whose svc-cron dies after the claim).
        if (!f) return this.log.warn(`schedule ${this.schedule.id} (${def.function_id}): missed fire of ${new Date(t).toISOString()} not run: this svc-cron holds no binding of it any more`);
        await this.track(this.firer.run(f, this.firer.startRequest(f)));
      });
    }
  }

  private async fire(t: number): Promise<void> {
    const f = this.fireOf(t);
    if (!f) return; // no binding left here: the time is left to whoever holds one
    const req = this.firer.startRequest(f);
    const r = await this.store.advance(this.schedule.id, { times: [t], policy: 'all', start: req });
    if (r.run.length === 0) return; // claimed by another svc-cron
    void this.track(this.firer.run(f, req, r.started));
  }

  private fireOf(t: number): Fire | undefined {
    const triggerId = this.triggerId();
    return triggerId === undefined ? undefined : { schedule: this.schedule, trigger_id: triggerId, scheduled_time: t, manual: false };
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.running.add(p);
    p.finally(() => this.running.delete(p)).catch(() => {});
    return p;
  }
}
