/**
 * svc-cron's errors: a stable string `code` and a message naming the offending input. svc-sdk sends
 * both to the caller (a `cron::*` call) or to the registering worker (a refused `cron` binding).
 * Every code is listed in docs/errors.md, section svc-cron.
 */
import { SvcError } from 'svc-sdk';

export type CronErrorCode =
  /** A binding's `expression` is not a cron expression croner accepts, or it never fires. */
  | 'invalid_expression'
  /** A binding's `timezone` is not an IANA time zone. */
  | 'invalid_timezone'
  /** A binding's config is not `{expression, timezone?, overlap?, catch_up?, queue?, payload?, timeout_ms?}`. */
  | 'invalid_trigger_config'
  /** A binding's config is over `max_trigger_bytes`, or the bindings held together over `max_total_bytes`. */
  | 'trigger_config_too_large'
  /** This svc-cron already holds `max_triggers` bindings. */
  | 'too_many_triggers'
  /** `cron::pause` / `resume` / `run_now` named no schedule or trigger svc-cron knows. */
  | 'schedule_not_found'
  /** A `cron::*` payload is not an object or a field is missing or mistyped. */
  | 'invalid_payload'
  /** The store cannot be reached or opened, or a commit failed. */
  | 'store_unavailable'
  /** SVC_WORKER_CONFIG has an unknown key or a bad value. */
  | 'invalid_config';

export class CronError extends SvcError {
  declare readonly code: CronErrorCode;
  constructor(code: CronErrorCode, message: string) {
    super(code, message);
    this.name = 'CronError';
  }
}

/** A value for an error message: short, quoted when a string. */
export function shown(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return JSON.stringify(v.length > 80 ? v.slice(0, 80) + '…' : v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}
