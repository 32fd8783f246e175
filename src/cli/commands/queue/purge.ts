import { Args, Command } from '@oclif/core';
import { callQueue } from '../../queue-client.js';
import { engineFlags } from '../../engine-flags.js';

export default class QueuePurge extends Command {
  static override summary = 'Delete the waiting and delayed jobs of a queue (running jobs finish; the DLQ stays).';
  static override examples = ['svc queue purge default'];
  static override args = { queue: Args.string({ required: true, description: 'Queue name.' }) };
  static override flags = { ...engineFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(QueuePurge);
    const r = await callQueue<{ purged: number }>(flags, 'queue::purge', { queue: args.queue });
    this.log(`purged ${r.purged} job(s) of ${args.queue}`);
  }
}
