import { Args, Command, Flags } from '@oclif/core';
import { addressFlag, callQueue } from '../../queue-client.js';

export default class QueueRedrive extends Command {
  static override summary = 'Move dead-lettered jobs back to their queue to run again (all of them, or --id ...).';
  static override description = 'Each redriven job gets max_attempts runs again; the handler sees its attempt number go on.';
  static override examples = ['svc queue redrive default', 'svc queue redrive emails --id 6f1c… --id 0b2e…'];
  static override args = { queue: Args.string({ required: true, description: 'Queue name.' }) };
  static override flags = { address: addressFlag, id: Flags.string({ summary: 'A dead-lettered job id (repeatable).', multiple: true }) };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(QueueRedrive);
    const r = await callQueue<{ redriven: number }>(flags.address, 'queue::dlq::redrive', { queue: args.queue, ...(flags.id ? { ids: flags.id } : {}) });
    this.log(`redriven ${r.redriven} job(s) of ${args.queue}`);
  }
}
