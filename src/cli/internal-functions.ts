import type { Worker } from 'svc-sdk';
import { listAll } from '../engine/listing-pages.js';

/**
 * The ids of the functions workers registered as internal (`metadata: {internal: true}`, such as
 * svc-cron's `cron::run_now::<process id>`): plumbing that the CLI's listings leave out, as they
 * leave out the engine's `engine::*` builtins (docs/protocol.md, registerfunction).
 */
export async function internalFunctionIds(w: Worker): Promise<Set<string>> {
  try {
    const functions = await listAll<{ function_id: string; metadata?: unknown }>((payload) => w.trigger({ function_id: 'engine::functions::list', payload }), 'functions', { include_builtins: false });
    return new Set(functions.filter((f) => isInternalMetadata(f.metadata)).map((f) => f.function_id));
  } catch {
    // A listing that cannot tell (a token without that right) shows every function rather than fail.
    return new Set();
  }
}

export function isInternalMetadata(metadata: unknown): boolean {
  return typeof metadata === 'object' && metadata !== null && (metadata as { internal?: unknown }).internal === true;
}
