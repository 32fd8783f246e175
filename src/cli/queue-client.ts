/** What the `svc queue` commands share: the engine address flag and one call to svc-queue. */
import { Flags } from '@oclif/core';
import { ADDRESS_DEFAULT, engineAddress, fail, formatError, withClient } from './client.js';

export const addressFlag = Flags.string({ summary: `Engine address (${ADDRESS_DEFAULT}).` });
export const jsonFlag = Flags.boolean({ summary: 'Print JSON.', default: false });

/** Call a svc-queue function; on error print it and exit 1 (svc-queue not running is said plainly). */
export async function callQueue<T>(address: string | undefined, function_id: string, payload: Record<string, unknown>): Promise<T> {
  try {
    return await withClient(engineAddress(address), (w) => w.trigger<T>({ function_id, payload }));
  } catch (e) {
    if ((e as { code?: string }).code === 'function_not_found') fail(`svc-queue is not running (no worker provides ${function_id}); start it with \`svc worker add svc-queue\``);
    process.stderr.write(formatError(e) + '\n');
    process.exit(1);
  }
}

export function when(ms: number | null | undefined): string {
  return typeof ms === 'number' ? new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-';
}
