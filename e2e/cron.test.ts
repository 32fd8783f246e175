/**
 * `svc cron` end to end, as a new user runs it: the real binary against an engine process, svc-cron
 * added with `svc worker add svc-cron`, a schedule bound by an svc-sdk worker.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, runSvc, tempDir, until } from './helpers/cli.js';
import { RawClient } from '../test/helpers/raw-client.js';

describe('svc cron', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;
  let triggerId = '';
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await worker?.shutdown();
    await engine?.stop('SIGTERM', 20_000);
    tmp.remove();
  });

  test('without svc-cron, svc cron list says how to start it', async () => {
    const r = await svc(['cron', 'list']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: function_not_found: .*cron::list.* \(is svc-cron running\? svc worker add svc-cron\)\n$/);
  });

  test('svc worker add svc-cron, a bound schedule, then list, pause, run, resume', async () => {
    const add = await svc(['worker', 'add', 'svc-cron']);
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /svc-cron auto-started/);
    worker = registerWorker(engine.url, { workerName: 'reports', echoLogs: false });
    let runs = 0;
    worker.registerFunction('reports::hourly', (e: { manual: boolean }) => ({ run: ++runs, manual: e.manual }));
    triggerId = (await worker.registerTrigger({ type: 'cron', function_id: 'reports::hourly', config: { expression: '@hourly', timezone: 'Asia/Kolkata' } })).id;

    const list = await until('the schedule in svc cron list', async () => {
      const r = await svc(['cron', 'list']);
      return r.code === 0 && r.stdout.includes('reports::hourly') ? r.stdout : undefined;
    }, 20_000);
    const [header, row] = list.trim().split('\n');
    assert.match(header!, /^SCHEDULE\s+FUNCTION\s+EXPRESSION\s+TIMEZONE\s+NEXT\s+LAST\s+LAST ERROR\s+TRIGGERS$/);
    // NEXT is in the schedule's own zone, named: the top of an hour there (it is :30 in UTC).
    assert.match(row!, /^[0-9a-f]{16}\s+reports::hourly\s+@hourly\s+Asia\/Kolkata\s+\d{4}-\d\d-\d\d \d\d:00:00\+05:30 Asia\/Kolkata\s+-\s+-\s+1$/);
    const [nextIso] = (JSON.parse((await svc(['cron', 'list', '--json'])).stdout) as { next_fires: string[] }[])[0]!.next_fires;
    assert.match(nextIso!, /^\d{4}-\d\d-\d\dT\d\d:30:00\.000Z$/, '--json keeps the UTC instants');
    const scheduleId = row!.split(/\s+/)[0]!;

    const pause = await svc(['cron', 'pause', triggerId]);
    assert.equal(pause.code, 0, pause.stderr);
    assert.equal(pause.stdout, `✓ schedule ${scheduleId} (reports::hourly) paused\n`);
    assert.match((await svc(['cron', 'list'])).stdout, /reports::hourly\s+@hourly\s+Asia\/Kolkata\s+paused/);

    const run = await svc(['cron', 'run', scheduleId]);
    assert.equal(run.code, 0, run.stderr);
    const outcome = JSON.parse(run.stdout) as { outcome: string; result: { run: number; manual: boolean }; trigger_id: string };
    assert.equal(outcome.outcome, 'ok');
    assert.deepEqual(outcome.result, { run: 1, manual: true });
    assert.equal(outcome.trigger_id, triggerId);
    assert.match((await svc(['cron', 'list'])).stdout, /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+05:30 Asia\/Kolkata ok in \d+ ms \(run now\)/);

    const resume = await svc(['cron', 'resume', scheduleId]);
    assert.equal(resume.stdout, `✓ schedule ${scheduleId} (reports::hourly) active\n`);

    const missing = await svc(['cron', 'pause', '0123456789abcdef']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: schedule_not_found: cron::pause: no schedule has id "0123456789abcdef"/);
    assert.match(missing.stderr, /ID may be a schedule id or trigger id from `svc cron list`, or the function id a schedule calls/);
  });

  // Before: svc-cron's own cron::run_now::<process id>, how it passes a run on to the replica
  // holding a schedule, was listed among its functions as if it were one to call.
  test("svc status and svc worker list leave out svc-cron's internal cron::run_now::<process id>", async () => {
    const status = await svc(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /cron::run_now\b/);
    assert.doesNotMatch(status.stdout, /cron::run_now::/);
    const json = JSON.parse((await svc(['status', '--json'])).stdout) as { functions: string[] };
    assert.deepEqual(json.functions.filter((f) => f.startsWith('cron::run_now::')), []);
    const list = await svc(['worker', 'list']);
    assert.equal(list.code, 0, list.stderr);
    // Its four operations, whole (before: "cron::run_now,… +1 more", the internal one).
    const row = list.stdout.split('\n').find((l) => l.startsWith('svc-cron ')) ?? '';
    assert.match(row, /\scron::list,cron::pause,cron::resume,cron::run_now\s/, list.stdout);
    assert.doesNotMatch(row, /cron::run_now::|more/);
    // --json keeps every function.
    const rows = JSON.parse((await svc(['worker', 'list', '--json'])).stdout) as Array<{ name: string; functions: string[] }>;
    assert.equal(rows.find((r) => r.name === 'svc-cron')?.functions.filter((f) => f.startsWith('cron::run_now::')).length, 1);
  });

  // Before: the function id, what a user knows the schedule by, was taken for a trigger id and
  // refused with "no live cron trigger has id".
  test('svc cron pause|resume|run take the function id the schedule calls; several schedules: refused, listed', async () => {
    const scheduleId = /^([0-9a-f]{16})\s+reports::hourly/m.exec((await svc(['cron', 'list'])).stdout)![1]!;
    const pause = await svc(['cron', 'pause', 'reports::hourly']);
    assert.equal(pause.code, 0, pause.stderr);
    assert.equal(pause.stdout, `✓ schedule ${scheduleId} (reports::hourly) paused\n`);
    const resume = await svc(['cron', 'resume', 'reports::hourly']);
    assert.equal(resume.stdout, `✓ schedule ${scheduleId} (reports::hourly) active\n`);
    const run = await svc(['cron', 'run', 'reports::hourly']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { schedule_id: string }).schedule_id, scheduleId);

    await worker.registerTrigger({ type: 'cron', function_id: 'reports::hourly', config: { expression: '@daily' } });
    await until('two schedules of reports::hourly', async () => ((await svc(['cron', 'list'])).stdout.match(/reports::hourly/g)?.length === 2 ? true : undefined), 20_000);
    // A schedule with no timezone is read in UTC, and its times say so.
    assert.match((await svc(['cron', 'list'])).stdout, /reports::hourly\s+@daily\s+UTC\s+\d{4}-\d\d-\d\d 00:00:00 UTC\s/);
    const two = await svc(['cron', 'pause', 'reports::hourly']);
    assert.equal(two.code, 1);
    assert.match(two.stderr, /^error: ambiguous_schedule: 2 schedules call reports::hourly: .*; pass one of these schedule ids\n$/);
    assert.ok(two.stderr.includes(`${scheduleId} (@hourly)`), two.stderr);
    assert.match(two.stderr, /[0-9a-f]{16} \(@daily\)/);
    // Before: a function without schedules printed "No cron schedules. Bind one: …" as if none existed.
    const noneListed = await svc(['cron', 'list', '--function-id', 'reports::weekly']);
    assert.equal(noneListed.code, 0, noneListed.stderr);
    assert.equal(noneListed.stdout, 'No cron schedules call reports::weekly (svc cron list shows them all)\n');
    const none = await svc(['cron', 'pause', 'reports::weekly']);
    assert.equal(none.code, 1);
    // A function id close to one a schedule calls is a typo: the one meant is named.
    assert.match(none.stderr, /^error: schedule_not_found: no cron schedule calls reports::weekly \(did you mean "reports::hourly"\?\)\n/);
    const far = await svc(['cron', 'pause', 'billing::sync']);
    assert.match(far.stderr, /schedule_not_found: .*no live cron trigger has id "billing::sync"[\s\S]*or the function id a schedule calls/);
  });

  // An iii client picks its own trigger ids; one close to the function id it binds is still that
  // trigger's id, not a typo of the function id (the suggestion above must not refuse it).
  test('svc cron pause <trigger id with ::> close to the function id pauses that trigger\'s schedule', async () => {
    const raw = await RawClient.connect(engine.url);
    try {
      raw.send({ type: 'registertrigger', id: 'reports::hourly_job', trigger_type: 'cron', function_id: 'reports::hourly', config: { expression: '@weekly' } });
      const row = await until('the @weekly schedule', async () => /^([0-9a-f]{16})\s+reports::hourly\s+@weekly/m.exec((await svc(['cron', 'list'])).stdout)?.[1], 20_000);
      const pause = await svc(['cron', 'pause', 'reports::hourly_job']);
      assert.equal(pause.code, 0, pause.stderr);
      assert.equal(pause.stdout, `✓ schedule ${row} (reports::hourly) paused\n`);
    } finally {
      raw.close();
    }
  });
});
