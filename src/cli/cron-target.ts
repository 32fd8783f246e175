import { Args, Flags } from '@oclif/core';
import { InvocationError } from 'svc-sdk';
import { formatError } from './client.js';

/** The argument of `svc cron pause|resume|run`: a schedule id (16 hex digits, from `svc cron list`) or a trigger id. */
export const cronTargetArg = Args.string({ required: true, description: 'Schedule id (from `svc cron list`) or trigger id.' });

export const addressFlag = Flags.string({ summary: 'Engine address (default: $SVC_URL, else the engine running for ./config.yaml, else ws://localhost:49134).' });

/** `{schedule_id}` for a schedule id, else `{trigger_id}`. */
export function cronTarget(id: string): { schedule_id: string } | { trigger_id: string } {
  return /^[0-9a-f]{16}$/.test(id) ? { schedule_id: id } : { trigger_id: id };
}

/** `error: <code>: <message>`, with how to start svc-cron when it is not running. */
export function cronError(e: unknown): string {
  const hint = e instanceof InvocationError && e.code === 'function_not_found' ? ' (is svc-cron running? svc worker add svc-cron)' : '';
  return formatError(e) + hint;
}
