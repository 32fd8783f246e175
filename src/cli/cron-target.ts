import { Args } from '@oclif/core';
import { InvocationError, type Worker } from 'svc-sdk';
import { closestKey } from 'svc-sdk/internal';
import { SCHEDULE_ID } from '../workers/cron/schedule.js';
import { formatError } from './client.js';

/** The argument of `svc cron pause|resume|run`: what a user has at hand for a schedule. */
export const cronTargetArg = Args.string({
  required: true,
  description: 'Schedule id (from `svc cron list`), the id of one of its cron triggers, or the function id the schedule calls.',
});

interface ListedSchedule {
  schedule_id: string;
  function_id: string;
  expression: string;
  trigger_ids?: string[];
}

/**
 * The payload of cron::pause|resume|run_now for `id`: `{schedule_id}` for a schedule id (16 hex
 * digits); for a function id (`reports::daily`, what a user knows the schedule by) the schedule that
 * calls it, found with cron::list, refused naming the candidates when there are several; else
 * `{trigger_id}`.
 */
export async function cronTarget(w: Worker, id: string): Promise<{ schedule_id: string } | { trigger_id: string }> {
  if (SCHEDULE_ID.test(id)) return { schedule_id: id };
  if (id.includes('::')) {
    // Every schedule, once: those calling `id`, else its trigger ids and the function ids they call.
    const { schedules } = await w.trigger<{ schedules: ListedSchedule[] }>({ function_id: 'cron::list', payload: {} });
    const found = schedules.filter((s) => s.function_id === id);
    if (found.length === 1) return { schedule_id: found[0]!.schedule_id };
    if (found.length > 1) {
      throw new InvocationError(
        'ambiguous_schedule',
        `${found.length} schedules call ${id}: ${found.map((s) => `${s.schedule_id} (${s.expression})`).join(', ')}; pass one of these schedule ids`,
      );
    }
    // No schedule calls a function of that id. A trigger id a schedule lists is taken as one (an iii
    // client picks its own trigger ids, `::` and all, and one may be close to the function id);
    // else close to a function id that a schedule calls: a typo, say which; else maybe a trigger id.
    if (schedules.some((s) => s.trigger_ids?.includes(id))) return { trigger_id: id };
    const near = closestKey(id, [...new Set(schedules.map((s) => s.function_id))]);
    if (near) throw new InvocationError('schedule_not_found', `no cron schedule calls ${id} (did you mean "${near}"?)`);
  }
  return { trigger_id: id };
}

/** `error: <code>: <message>`, with how to start svc-cron when it is not running and what ID may be. */
export function cronError(e: unknown): string {
  const hint =
    e instanceof InvocationError && e.code === 'function_not_found'
      ? ' (is svc-cron running? svc worker add svc-cron)'
      : e instanceof InvocationError && e.code === 'schedule_not_found'
        ? '\nID may be a schedule id or trigger id from `svc cron list`, or the function id a schedule calls'
        : '';
  return formatError(e) + hint;
}
