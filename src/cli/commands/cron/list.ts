import { Command, Flags } from '@oclif/core';
import { cronError } from '../../cron-target.js';
import { engineFlags, withEngine } from '../../engine-flags.js';
import { table } from '../../project.js';
import { inZone } from '../../zoned-time.js';
import type { ScheduleView } from '../../../workers/cron/operations.js';

export default class CronList extends Command {
  static override summary = 'List the schedules of cron triggers: next fire, last fire and its outcome, paused.';
  static override description = `Calls cron::list on svc-cron (svc worker add svc-cron). One row per schedule: a function and
its trigger config; bindings of the same schedule by several replicas of a worker are one row.
NEXT and LAST are wall-clock times in the schedule's own time zone (UTC when it names none), with
that zone's offset and name; --json gives the UTC instants. LAST is the latest fire time with its
outcome (ok, error, skipped, paused, running).`;
  static override examples = ['svc cron list', 'svc cron list --function-id reports::nightly', 'svc cron list --json'];
  static override flags = {
    'function-id': Flags.string({ summary: 'Only the schedules of this function.' }),
    json: Flags.boolean({ summary: 'Print cron::list\'s JSON.', default: false }),
    ...engineFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(CronList);
    let schedules: ScheduleView[];
    try {
      const payload = flags['function-id'] ? { function_id: flags['function-id'] } : {};
      schedules = (await withEngine(flags, (w) => w.trigger<{ schedules: ScheduleView[] }>({ function_id: 'cron::list', payload }))).schedules;
    } catch (e) {
      process.stderr.write(cronError(e) + '\n');
      return this.exit(1);
    }
    if (flags.json) return this.log(JSON.stringify(schedules, null, 2));
    // With --function-id an empty list says only that this function has none: others may exist.
    if (schedules.length === 0 && flags['function-id']) return this.log(`No cron schedules call ${flags['function-id']} (svc cron list shows them all)`);
    if (schedules.length === 0) return this.log('No cron schedules. Bind one: registerTrigger({type: "cron", function_id, config: {expression: "0 9 * * *"}}) (docs/cron.md)');
    const rows = schedules.map((s) => {
      const last = s.last_fire;
      const result = s.last_result;
      let lastText = '-';
      if (last) {
        const how = last.outcome === 'ok' || last.outcome === 'error' ? `${last.outcome}${last.duration_ms !== undefined ? ` in ${last.duration_ms} ms` : ''}` : last.outcome;
        lastText = `${inZone(last.scheduled_time, s.timezone)} ${how}${last.manual ? ' (run now)' : ''}`;
        if (last.outcome === 'error' && last.error) lastText += `: ${last.error.code}`;
      }
      return {
        schedule: s.schedule_id,
        function: s.function_id,
        expression: s.expression,
        timezone: s.timezone,
        next: s.paused ? 'paused' : s.next_fires[0] ? inZone(s.next_fires[0], s.timezone) : 'never',
        last: lastText,
        'last error': result?.outcome === 'error' ? `${result.error?.code}: ${result.error?.message}`.slice(0, 60) : null,
        triggers: s.trigger_ids.length,
      };
    });
    this.log(table(rows, ['schedule', 'function', 'expression', 'timezone', 'next', 'last', 'last error', 'triggers']));
  }
}
