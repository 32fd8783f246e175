import { InvocationError } from './errors.js';

/** What a worker reads from its environment when its options leave it unset. */

/** SVC_PROCESS_REPORT_MS, when it is a whole number of ms (0: no reports). */
export function reportIntervalFromEnv(): number | undefined {
  const v = process.env.SVC_PROCESS_REPORT_MS;
  return v !== undefined && /^\d{1,9}$/.test(v) ? Number(v) : undefined;
}

/**
 * The namespace a worker is in: the option, else env SVC_NAMESPACE (blank there reads as unset, as
 * a shell's `NS=` means); undefined for `default`. A blank option is a mistake and is refused.
 */
export function workerNamespace(option: string | undefined): string | undefined {
  if (option !== undefined) {
    if (typeof option !== 'string' || option.trim().length === 0) {
      throw new InvocationError('invalid_namespace', `WorkerOptions.namespace must be a non-blank string, got ${JSON.stringify(option)}; leave it unset for the default namespace`);
    }
    return option;
  }
  const env = process.env.SVC_NAMESPACE;
  return env !== undefined && env.trim().length > 0 ? env : undefined;
}
