import { Command, Flags } from '@oclif/core';
import { cronError, cronTarget, cronTargetArg } from '../../cron-target.js';
import { engineFlags, withEngine } from '../../engine-flags.js';
import type { RunNowResult } from '../../../workers/cron/operations.js';

export default class CronRun extends Command {
  static override summary = 'Run a schedule once now and print the outcome as JSON.';
  static override description = `ID is a schedule id from \`svc cron list\`, the id of one of its cron triggers, or the function id it calls. The function
receives the usual payload with manual: true; the run counts for the schedule's overlap policy
(with overlap skip it is skipped while a run is in progress) and runs a paused schedule too.
Exit status 1 when the run failed or was skipped.`;
  static override examples = ['svc cron run 3f9a0c1d2e4b5a69', 'svc cron run reports::daily'];
  static override args = { id: cronTargetArg };
  static override flags = {
    ...engineFlags,
    'timeout-ms': Flags.integer({ summary: 'How long to wait for the run.', default: 3_600_000, min: 1 }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(CronRun);
    try {
      const r = await withEngine(flags, async (w) =>
        w.trigger<RunNowResult>({ function_id: 'cron::run_now', payload: await cronTarget(w, args.id), timeoutMs: flags['timeout-ms'] }),
      );
      this.log(JSON.stringify(r));
      if (r.outcome !== 'ok') this.exit(1);
    } catch (e) {
      process.stderr.write(cronError(e) + '\n');
      this.exit(1);
    }
  }
}
