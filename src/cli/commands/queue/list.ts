import { Command } from '@oclif/core';
import { table } from '../../project.js';
import { callQueue, jsonFlag } from '../../queue-client.js';
import { engineFlags } from '../../engine-flags.js';

interface Listing {
  queues: Array<Record<string, unknown> & { queue: string; configured: boolean }>;
  topics: Array<{ topic: string; subscribers: Array<{ function_id: string; queue: string; live: boolean }> }>;
  absent_functions: string[];
}

export default class QueueList extends Command {
  static override summary = 'List the queues of svc-queue with their counts, and the durable topics with their subscribers.';
  static override description = `Per queue: jobs waiting, delayed (delay_ms or a retry's backoff), running, dead-lettered (dlq),
and since the queue was first used: completed jobs and failed attempts.`;
  static override examples = ['svc queue list', 'svc queue list --json'];
  static override flags = { ...engineFlags, json: jsonFlag };

  async run(): Promise<void> {
    const { flags } = await this.parse(QueueList);
    const l = await callQueue<Listing>(flags, 'queue::list', {});
    if (flags.json) return this.log(JSON.stringify(l, null, 2));
    this.log(table(l.queues.map((q) => ({ ...q, queue: q.configured ? q.queue : `${q.queue} (not configured)` })), ['queue', 'waiting', 'delayed', 'running', 'dlq', 'completed', 'failed']));
    if (l.topics.length > 0) {
      const rows = l.topics.flatMap((t) => t.subscribers.map((s) => ({ topic: t.topic, function: s.function_id, queue: s.queue, subscribed: s.live ? 'yes' : 'expired' })));
      this.log('\n' + table(rows, ['topic', 'function', 'queue', 'subscribed']));
    }
    if (l.absent_functions.length > 0) this.log(`\nwaiting for a provider (not counted as attempts): ${l.absent_functions.join(', ')}`);
  }
}
