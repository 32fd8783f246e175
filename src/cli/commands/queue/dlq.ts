import { Args, Command, Flags } from '@oclif/core';
import { table } from '../../project.js';
import { callQueue, jsonFlag, when } from '../../queue-client.js';
import { engineFlags } from '../../engine-flags.js';

interface DeadJob {
  id: string;
  function_id: string;
  attempts: number;
  at: number | null;
  data: unknown;
  error: { code: string; message: string } | null;
}

export default class QueueDlq extends Command {
  static override summary = "List a queue's dead-lettered jobs: id, function, attempts, last error.";
  static override description = 'Jobs land here after max_attempts failed runs. `svc queue redrive <queue>` runs them again.';
  static override examples = ['svc queue dlq default', 'svc queue dlq emails --json --limit 100'];
  static override args = { queue: Args.string({ required: true, description: 'Queue name.' }) };
  static override flags = {
    ...engineFlags,
    json: jsonFlag,
    limit: Flags.integer({ summary: 'How many to show (at most 100).', default: 50, min: 1, max: 100 }),
    offset: Flags.integer({ summary: 'Skip this many (oldest first).', default: 0, min: 0 }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(QueueDlq);
    const r = await callQueue<{ total: number; jobs: DeadJob[] }>(flags, 'queue::dlq::list', { queue: args.queue, limit: flags.limit, offset: flags.offset });
    if (flags.json) return this.log(JSON.stringify(r, null, 2));
    if (r.total === 0) return this.log(`The DLQ of ${args.queue} is empty.`);
    const rows = r.jobs.map((j) => ({
      id: j.id,
      function: j.function_id,
      attempts: j.attempts,
      failed_at: when(j.at),
      error: j.error ? `${j.error.code}: ${j.error.message.split('\n')[0]!.slice(0, 80)}` : '-',
    }));
    this.log(table(rows, ['id', 'function', 'attempts', 'failed_at', 'error']));
    this.log(`${r.total} dead-lettered job(s) in ${args.queue}${r.total > r.jobs.length ? ` (showing ${flags.offset + 1}-${flags.offset + r.jobs.length})` : ''}; payloads: --json`);
  }
}
