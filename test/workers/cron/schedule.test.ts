/**
 * A cron binding's config: what is accepted, what is refused (with the code and a message naming
 * the input), how a schedule is identified, and fire times, including croner's documented
 * daylight-saving behaviour on real transition dates.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextTimes, parseSchedule, timesBetween } from '../../../src/workers/cron/schedule.js';

const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());
const at = (s: string) => Date.parse(s);

function refused(config: unknown, code: string, ...mentions: string[]): void {
  assert.throws(
    () => parseSchedule('jobs::report', config, 'cron trigger t1 for jobs::report'),
    (e: Error & { code?: string }) => {
      assert.equal(e.code, code, e.message);
      assert.ok(e.message.startsWith('cron trigger t1 for jobs::report: '), e.message);
      for (const m of mentions) assert.ok(e.message.includes(m), `${JSON.stringify(e.message)} should mention ${m}`);
      return true;
    },
  );
}

test('5-field (minutes), 6-field (seconds first), 7-field (with year) expressions and nicknames', () => {
  const from = at('2026-06-01T12:00:30.500Z');
  const next = (expression: string, n = 2) => iso(nextTimes(parseSchedule('f', { expression }, 'x').cron, from, n));
  assert.deepEqual(next('*/15 * * * *'), ['2026-06-01T12:15:00.000Z', '2026-06-01T12:30:00.000Z']);
  assert.deepEqual(next('*/2 * * * * *'), ['2026-06-01T12:00:32.000Z', '2026-06-01T12:00:34.000Z']);
  assert.deepEqual(next('0 0 9 * * MON 2027', 1), ['2027-01-04T09:00:00.000Z']);
  assert.deepEqual(next('@hourly', 1), ['2026-06-01T13:00:00.000Z']);
  assert.deepEqual(next('@DAILY', 1), ['2026-06-02T00:00:00.000Z']);
  assert.deepEqual(next('  0   12 *  *  * ', 1), ['2026-06-02T12:00:00.000Z']);
  assert.deepEqual(next('0 9 * * *', 1), ['2026-06-02T09:00:00.000Z']);
});

test('time zones: fire times follow the zone; names keep their spelling with the case corrected', () => {
  const s = parseSchedule('f', { expression: '0 9 * * *', timezone: 'europe/paris' }, 'x');
  assert.equal(s.def.timezone, 'Europe/Paris');
  assert.equal(parseSchedule('f', { expression: '0 9 * * *', timezone: 'utc' }, 'x').def.timezone, 'UTC');
  // The name as written, not ICU's older one (Asia/Calcutta).
  assert.equal(parseSchedule('f', { expression: '0 9 * * *', timezone: 'Asia/Kolkata' }, 'x').def.timezone, 'Asia/Kolkata');
  // 09:00 in Paris in June is 07:00 UTC (CEST, UTC+2).
  assert.deepEqual(iso(nextTimes(s.cron, at('2026-06-01T00:00:00Z'), 1)), ['2026-06-01T07:00:00.000Z']);
});

test('daylight saving, as croner documents it: a time in the spring-forward gap runs once right after the gap; a repeated time runs once', () => {
  // America/New_York, 2026-03-08: clocks jump from 02:00 EST to 03:00 EDT, so 02:30 does not exist.
  // croner: a fixed-time job (single values for second, minute and hour) runs at the first valid
  // time after the gap, 03:00 EDT = 07:00 UTC; the next days at 02:30 EDT = 06:30 UTC.
  const fixed = parseSchedule('f', { expression: '30 2 * * *', timezone: 'America/New_York' }, 'x');
  assert.deepEqual(iso(nextTimes(fixed.cron, at('2026-03-07T12:00:00Z'), 3)), ['2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z']);
  // The same with seconds, as a 6-field expression.
  const fixedSeconds = parseSchedule('f', { expression: '0 30 2 * * *', timezone: 'America/New_York' }, 'x');
  assert.deepEqual(iso(nextTimes(fixedSeconds.cron, at('2026-03-07T12:00:00Z'), 1)), ['2026-03-08T07:00:00.000Z']);
  // An interval job (wildcard or step in the time fields): times in the gap are skipped.
  const interval = parseSchedule('f', { expression: '*/30 * * * *', timezone: 'America/New_York' }, 'x');
  assert.deepEqual(iso(nextTimes(interval.cron, at('2026-03-08T06:00:00Z'), 3)), ['2026-03-08T06:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T07:30:00.000Z']);
  // 2026-11-01: 01:30 happens twice (EDT, then EST); a fixed-time job runs once, at the first.
  const fallBack = parseSchedule('f', { expression: '30 1 * * *', timezone: 'America/New_York' }, 'x');
  assert.deepEqual(iso(nextTimes(fallBack.cron, at('2026-10-31T12:00:00Z'), 2)), ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
});

test('invalid expressions are refused at registration with invalid_expression, naming the expression', () => {
  refused({ expression: '61 * * * *' }, 'invalid_expression', '"61 * * * *"', 'minute');
  refused({ expression: 'every minute' }, 'invalid_expression', '"every minute"', '5 fields');
  refused({ expression: '* * *' }, 'invalid_expression', '"* * *"');
  refused({ expression: '* * * * * * * *' }, 'invalid_expression');
  refused({ expression: '2030-01-01T00:00:00' }, 'invalid_expression', '2030-01-01T00:00:00');
  refused({ expression: '@reboot' }, 'invalid_expression', '@reboot');
  refused({ expression: '0 0 30 2 *' }, 'invalid_expression', '"0 0 30 2 *"', 'never fires');
  refused({ expression: '0 0 0 1 1 * 2001' }, 'invalid_expression', 'never fires');
  refused({ expression: '' }, 'invalid_expression', 'config.expression');
  refused({}, 'invalid_expression', 'config.expression');
});

test('other config problems are refused, naming the field and the value', () => {
  refused('*/5 * * * *', 'invalid_trigger_config', 'config must be an object');
  refused({ expression: '* * * * *', timezone: 'Mars/Olympus' }, 'invalid_timezone', '"Mars/Olympus"');
  refused({ expression: '* * * * *', timezone: 5 }, 'invalid_trigger_config', 'config.timezone');
  refused({ expression: '* * * * *', overlap: 'queue' }, 'invalid_trigger_config', 'config.overlap', '"queue"');
  refused({ expression: '* * * * *', catch_up: true }, 'invalid_trigger_config', 'config.catch_up', 'boolean true');
  refused({ expression: '* * * * *', queue: '' }, 'invalid_trigger_config', 'config.queue');
  refused({ expression: '* * * * *', timeout_ms: 0 }, 'invalid_trigger_config', 'config.timeout_ms');
  refused({ expression: '* * * * *', timeout_ms: 3_600_001 }, 'invalid_trigger_config', 'config.timeout_ms');
  refused({ expression: '* * * * *', cron: 'x' }, 'invalid_trigger_config', '"cron"', 'known keys');
});

test('a schedule is its function and its whole normalised config', () => {
  const id = (fn: string, config: unknown) => parseSchedule(fn, config, 'x').id;
  const base = id('jobs::report', { expression: '0 9 * * *', payload: { a: 1, b: [1, { c: 2, d: 3 }] } });
  assert.match(base, /^[0-9a-f]{16}$/);
  // Spacing, zone spelling, defaults written out and key order do not matter.
  assert.equal(id('jobs::report', { expression: ' 0  9 * * * ', timezone: 'utc', overlap: 'skip', catch_up: 'none', payload: { b: [1, { d: 3, c: 2 }], a: 1 } }), base);
  // Anything that changes what fires, when, or how, is another schedule.
  assert.notEqual(id('jobs::other', { expression: '0 9 * * *', payload: { a: 1, b: [1, { c: 2, d: 3 }] } }), base);
  assert.notEqual(id('jobs::report', { expression: '0 9 * * *', payload: { a: 2, b: [1, { c: 2, d: 3 }] } }), base);
  assert.notEqual(id('jobs::report', { expression: '0 9 * * *', timezone: 'Europe/Paris', payload: { a: 1, b: [1, { c: 2, d: 3 }] } }), base);
  assert.notEqual(id('jobs::report', { expression: '0 9 * * *', overlap: 'allow', payload: { a: 1, b: [1, { c: 2, d: 3 }] } }), base);
});

test('timesBetween: the times in (from, to], and only the latest ones when there are many', () => {
  const { cron } = parseSchedule('f', { expression: '* * * * * *' }, 'x');
  const t0 = at('2026-06-01T12:00:00Z');
  assert.deepEqual(timesBetween(cron, t0, t0 + 3000, 10), { times: [t0 + 1000, t0 + 2000, t0 + 3000], more: false });
  assert.deepEqual(timesBetween(cron, t0, t0 + 999, 10), { times: [], more: false });
  // A day of per-second fires: only the latest 3, without walking the whole day.
  assert.deepEqual(timesBetween(cron, t0, t0 + 86_400_000, 3), { times: [t0 + 86_398_000, t0 + 86_399_000, t0 + 86_400_000], more: true });
});
