/** What the `svc queue` commands share: the engine flags and one call to svc-queue. */
import { Flags } from '@oclif/core';
import { fail, formatError } from './client.js';
import { withEngine, type EngineFlagValues } from './engine-flags.js';

export const jsonFlag = Flags.boolean({ summary: 'Print JSON.', default: false });

/** Call a svc-queue function; on error print it and exit 1 (svc-queue not running is said plainly). */
export async function callQueue<T>(engine: EngineFlagValues, function_id: string, payload: Record<string, unknown>): Promise<T> {
  try {
    return await withEngine(engine, (w) => w.trigger<T>({ function_id, payload }));
  } catch (e) {
    if ((e as { code?: string }).code === 'function_not_found') fail(`svc-queue is not running (no worker provides ${function_id}); start it with \`svc worker add svc-queue\``);
    process.stderr.write(formatError(e) + '\n');
    process.exit(1);
  }
}

export function when(ms: number | null | undefined): string {
  return typeof ms === 'number' ? new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-';
}
