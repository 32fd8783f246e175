/**
 * A `cron` binding's config, checked once and normalised into a ScheduleDef, and the schedule's
 * fire times. Expressions are parsed and evaluated by croner (docs/design.md, "svc-cron: the cron
 * library"), never by our own parser; time zones are IANA names checked with Intl.
 *
 * What identifies a schedule: its function id and its whole normalised config (expression with
 * single spaces, time zone with its case corrected, every option with its default filled in, payload with sorted
 * keys). Bindings with the same identity are one schedule, however many replicas of a worker bound
 * it and whichever svc-cron or engine holds each binding: one id, one claim per scheduled time.
 */
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { DEFAULT_INVOCATION_TIMEOUT_MS } from 'svc-sdk';
import { CronError, shown } from './errors.js';

export type Overlap = 'skip' | 'allow';
export type CatchUp = 'none' | 'last' | 'all';

export interface ScheduleDef {
  function_id: string;
  expression: string;
  timezone: string;
  overlap: Overlap;
  catch_up: CatchUp;
  /** Enqueue each fire on this svc-queue queue instead of calling the function directly. */
  queue: string | null;
  payload: unknown;
  /** Deadline of each run's call; also how long a run counts as running for `overlap: skip`. */
  timeout_ms: number;
}

export interface Schedule {
  id: string;
  def: ScheduleDef;
  cron: Cron;
}

export const DEFAULT_TIMEOUT_MS = DEFAULT_INVOCATION_TIMEOUT_MS;
/** The engine's default max_invocation_timeout_ms; a larger deadline would be refused per call. */
export const MAX_TIMEOUT_MS = 3_600_000;
const CONFIG_KEYS = ['expression', 'timezone', 'overlap', 'catch_up', 'queue', 'payload', 'timeout_ms'];
const FIELDS = /^\S+(\s+\S+){4,6}$/;
const NICKNAMES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

/**
 * An IANA zone as written, with its case corrected (`europe/paris` → `Europe/Paris`), or a clear
 * error. Only the case: ICU's own names for some zones are the old ones (`Asia/Kolkata` resolves to
 * `Asia/Calcutta`), and a user should see the name they wrote.
 */
export function canonicalZone(zone: string, where: string): string {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    throw new CronError('invalid_timezone', `${where}: timezone ${shown(zone)} is not an IANA time zone (e.g. "UTC", "Europe/Paris", "America/New_York")`);
  }
  return resolved.toLowerCase() === zone.toLowerCase() ? resolved : zone;
}

/** JSON text with object keys sorted at every level: equal values give equal text. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** What scheduleId() makes. */
export const SCHEDULE_ID = /^[0-9a-f]{16}$/;

export function scheduleId(def: ScheduleDef): string {
  const identity = canonicalJson(def);
  return createHash('sha256').update(identity).digest('hex').slice(0, 16);
}

/** Build croner's evaluator for a normalised expression and zone (throws CronError). */
export function cronOf(expression: string, timezone: string, where: string): Cron {
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, mode: 'auto' });
  } catch (e) {
    throw new CronError('invalid_expression', `${where}: expression ${shown(expression)} is not a valid cron expression: ${(e as Error).message.replace(/^CronPattern: /, '')}`);
  }
  if (cron.nextRun() === null) throw new CronError('invalid_expression', `${where}: expression ${shown(expression)} never fires (no future time matches it)`);
  return cron;
}

/**
 * Check a binding's config and normalise it. `where` names the binding in messages
 * (`cron trigger <id> for <function>`).
 */
export function parseSchedule(functionId: string, raw: unknown, where: string): Schedule {
  const refuse = (msg: string): never => {
    throw new CronError('invalid_trigger_config', `${where}: ${msg}`);
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    refuse(`config must be an object {expression, timezone?, overlap?, catch_up?, queue?, payload?, timeout_ms?}, got ${shown(raw)}`);
  }
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) {
    if (!CONFIG_KEYS.includes(k)) refuse(`unknown config key ${JSON.stringify(k)}; known keys: ${CONFIG_KEYS.join(', ')}`);
  }
  if (typeof c.expression !== 'string' || c.expression.trim() === '') {
    throw new CronError('invalid_expression', `${where}: config.expression must be a cron expression such as "*/5 * * * *" or "@hourly", got ${shown(c.expression)}`);
  }
  let expression = c.expression.trim().replace(/\s+/g, ' ');
  if (expression.startsWith('@')) {
    expression = expression.toLowerCase();
    if (!NICKNAMES.includes(expression)) {
      throw new CronError('invalid_expression', `${where}: expression ${shown(c.expression)} is not one of ${NICKNAMES.join(', ')}`);
    }
  } else if (!FIELDS.test(expression)) {
    // croner would also take an ISO date (a one-off run): a schedule here is fields only.
    throw new CronError(
      'invalid_expression',
      `${where}: expression ${shown(c.expression)} must have 5 fields (minute hour day month weekday), 6 (seconds first) or 7 (seconds first, year last)`,
    );
  }
  const tz = c.timezone ?? 'UTC';
  if (typeof tz !== 'string' || tz === '') refuse(`config.timezone must be an IANA time zone name, got ${shown(tz)}`);
  const timezone = canonicalZone(tz as string, where);
  const overlap = c.overlap ?? 'skip';
  if (overlap !== 'skip' && overlap !== 'allow') refuse(`config.overlap must be "skip" or "allow", got ${shown(overlap)}`);
  const catchUp = c.catch_up ?? 'none';
  if (catchUp !== 'none' && catchUp !== 'last' && catchUp !== 'all') refuse(`config.catch_up must be "none", "last" or "all", got ${shown(catchUp)}`);
  const queue = c.queue ?? null;
  if (queue !== null && (typeof queue !== 'string' || queue === '')) refuse(`config.queue must be a queue name, got ${shown(queue)}`);
  const timeout = c.timeout_ms ?? DEFAULT_TIMEOUT_MS;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_TIMEOUT_MS) {
    refuse(`config.timeout_ms must be an integer from 1 to ${MAX_TIMEOUT_MS}, got ${shown(timeout)}`);
  }
  const def: ScheduleDef = {
    function_id: functionId,
    expression,
    timezone,
    overlap: overlap as Overlap,
    catch_up: catchUp as CatchUp,
    queue: queue as string | null,
    payload: c.payload ?? null,
    timeout_ms: timeout as number,
  };
  return { id: scheduleId(def), def, cron: cronOf(expression, timezone, where) };
}

/** A stored ScheduleDef back into a Schedule (the def was checked when it was first bound). */
export function scheduleOf(id: string, def: ScheduleDef): Schedule {
  return { id, def, cron: cronOf(def.expression, def.timezone, `schedule ${id}`) };
}

/** The next `n` fire times after `after` (ms). */
export function nextTimes(cron: Cron, after: number, n: number): number[] {
  return cron.nextRuns(n, new Date(after)).map((d) => d.getTime());
}

/**
 * Fire times in (from, to], ascending; only the latest `max` of them when there are more, and
 * `more` = true then. Walks forward (the usual case is one or two times), and asks croner for the
 * latest ones directly when the span holds many (a long downtime of a per-second schedule).
 */
export function timesBetween(cron: Cron, from: number, to: number, max: number): { times: number[]; more: boolean } {
  const times: number[] = [];
  let at = new Date(from);
  for (;;) {
    const next = cron.nextRun(at);
    if (!next || next.getTime() > to) return { times, more: false };
    if (times.length === max) break;
    times.push(next.getTime());
    at = next;
  }
  // More than `max`: the latest `max` at or before `to` (previousRuns excludes its reference).
  const latest = cron.previousRuns(max, new Date(to + 1)).map((d) => d.getTime()).filter((t) => t > from);
  return { times: latest.reverse(), more: true };
}
