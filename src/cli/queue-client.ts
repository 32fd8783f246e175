/** What the `svc queue` commands share: the engine flags and one call to svc-queue. */
import { Flags } from '@oclif/core';
import { formatError } from './client.js';
import { withEngine, type EngineFlagValues } from './engine-flags.js';

export const jsonFlag = Flags.boolean({ summary: 'Print JSON.', default: false });

/** Call a svc-queue function; on error print it and exit 1 (with how to start svc-queue when it is not running). */
export async function callQueue<T>(engine: EngineFlagValues, function_id: string, payload: Record<string, unknown>): Promise<T> {
  try {
    return await withEngine(engine, (w) => w.trigger<T>({ function_id, payload }));
  } catch (e) {
    // The code first, as every CLI error has it (svc cron says the same with svc-cron's name).
    const hint = (e as { code?: string }).code === 'function_not_found' ? ' (is svc-queue running? svc worker add svc-queue)' : '';
    process.stderr.write(formatError(e) + hint + '\n');
    process.exit(1);
  }
}

export function when(ms: number | null | undefined): string {
  return typeof ms === 'number' ? new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-';
}
