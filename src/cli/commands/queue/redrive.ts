import { Args, Command, Flags } from '@oclif/core';
import { fail } from '../../client.js';
import { callQueue } from '../../queue-client.js';
import { engineFlags } from '../../engine-flags.js';

export default class QueueRedrive extends Command {
  static override summary = 'Move dead-lettered jobs back to their queue to run again (all of them, or --id ...).';
  static override description = 'Each redriven job gets max_attempts runs again; the handler sees its attempt number go on. With --id, an id that is not in the dead-letter queue is an error (job_not_found, exit 1) after the others are redriven (their count is printed first; none redriven: only the error).';
  static override examples = ['svc queue redrive default', 'svc queue redrive emails --id 6f1c… --id 0b2e…'];
  static override args = { queue: Args.string({ required: true, description: 'Queue name.' }) };
  static override flags = { ...engineFlags, id: Flags.string({ summary: 'A dead-lettered job id (repeatable).', multiple: true }) };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(QueueRedrive);
    if (!flags.id) {
      const r = await callQueue<{ redriven: number }>(flags, 'queue::dlq::redrive', { queue: args.queue });
      return this.log(`redriven ${r.redriven} job(s) of ${args.queue}`);
    }
    // One id at a time, so that an id not in the DLQ (mistyped, or redriven or deleted meanwhile) is named.
    const missing: string[] = [];
    for (const id of flags.id) {
      const r = await callQueue<{ redriven: number }>(flags, 'queue::dlq::redrive', { queue: args.queue, id });
      if (r.redriven === 0) missing.push(id);
    }
    // "redriven 0" before the error read as if something had been done: only a count of some is said.
    const redriven = flags.id.length - missing.length;
    if (redriven > 0 || missing.length === 0) this.log(`redriven ${redriven} job(s) of ${args.queue}`);
    if (missing.length > 0) {
      const notFound = { code: 'job_not_found', message: `${missing.map((id) => JSON.stringify(id)).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not in the dead-letter queue of ${args.queue} (svc queue dlq ${args.queue} lists it)` };
      fail(`${notFound.code}: ${notFound.message}`);
    }
  }
}
