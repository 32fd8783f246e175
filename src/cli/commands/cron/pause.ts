import { Command } from '@oclif/core';
import { cronError, cronTarget, cronTargetArg } from '../../cron-target.js';
import { engineFlags, withEngine } from '../../engine-flags.js';

export default class CronPause extends Command {
  static override summary = 'Pause a schedule: its fire times pass without running until `svc cron resume`.';
  static override description = 'ID is a schedule id from `svc cron list`, the id of one of its cron triggers, or the function id the schedule calls (refused, listing them, when several schedules call it). The state is kept by svc-cron\'s store: it holds across restarts and for every replica.';
  static override examples = ['svc cron pause 3f9a0c1d2e4b5a69', 'svc cron pause reports::daily'];
  static override args = { id: cronTargetArg };
  static override flags = { ...engineFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(CronPause);
    try {
      const r = await withEngine(flags, async (w) => w.trigger<{ schedule_id: string; function_id: string; paused: boolean }>({ function_id: 'cron::pause', payload: await cronTarget(w, args.id) }));
      this.log(`✓ schedule ${r.schedule_id} (${r.function_id}) ${r.paused ? 'paused' : 'active'}`);
    } catch (e) {
      process.stderr.write(cronError(e) + '\n');
      this.exit(1);
    }
  }
}
