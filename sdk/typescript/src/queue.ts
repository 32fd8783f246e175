/**
 * Durable queues and topics from a worker (served by the built-in worker svc-queue, docs/queues.md):
 * `TriggerAction` builds the `action` of a call, as iii-sdk's does, and `publish` sends a message to a
 * durable topic.
 *
 *   const { messageReceiptId } = await worker.trigger({ function_id: 'email::send', payload, action: TriggerAction.Enqueue({ queue: 'emails' }) });
 *   await publish(worker, 'orders', { id: 42 });
 */
import type { CallRequest, PublishResult } from './worker-types.js';
import type { Worker } from './worker.js';

export const TriggerAction = {
  /** Store the call as a job of `queue`; the call answers {messageReceiptId} and the function runs later. */
  Enqueue: (opts: { queue: string }): { type: 'enqueue'; queue: string } => ({ type: 'enqueue', queue: opts.queue }),
  /** Fire-and-forget: no answer is awaited. */
  Void: (): { type: 'void' } => ({ type: 'void' }),
} as const;

/**
 * Publish `data` to a durable topic: every function subscribed with a `durable:subscriber` trigger gets its own copy.
 * Without `data` (or with null) each subscriber's handler gets `{}`, as a call without payload does.
 */
export function publish(worker: Worker, topic: string, data?: unknown, options: Pick<CallRequest, 'timeoutMs' | 'parent' | 'signal'> = {}): Promise<PublishResult> {
  return worker.trigger<PublishResult>({ ...options, function_id: 'queue::publish', payload: { topic, data } });
}
