/**
 * docs/queues.md as a new user follows it, through the `svc` CLI only, from a fresh quickstart:
 * add svc-queue, enqueue from the CLI, see the job done in `svc queue list`, make one fail into the
 * DLQ, look at it, redrive it; then a refused enqueue, and a new queue set with --set. The only
 * departure from the docs: a free port instead of 49134.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort, EngineProcess, runSvc, tempDir, until } from './helpers/cli.js';

describe('durable queues as a new user, through the CLI', { timeout: 300_000 }, () => {
  const tmp = tempDir();
  const project = join(tmp.dir, 'qs');
  let engine: EngineProcess;

  const svc = (args: string[], timeoutMs = 30_000) => runSvc(args, { cwd: project, timeoutMs });
  /** `svc queue list --json`'s row of a queue. */
  const queue = async (name: string): Promise<Record<string, number>> => {
    const r = await svc(['queue', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return ((JSON.parse(r.stdout) as { queues: Array<Record<string, number> & { queue: string }> }).queues.find((q) => q.queue === name) ?? {}) as Record<string, number>;
  };

  before(async () => {
    const created = await runSvc(['create', '--template', 'quickstart', '--directory', project], { cwd: tmp.dir });
    assert.equal(created.code, 0, created.stderr);
    const cfg = join(project, 'config.yaml');
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace('port: 49134', `port: ${await closedPort()}`));
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project });
  });
  after(async () => {
    await engine?.stop('SIGTERM', 20_000);
    tmp.remove();
  });

  test('add svc-queue, enqueue, fail into the DLQ, redrive', async () => {
    const before = await svc(['trigger', '--enqueue', 'default', 'math::add', 'a=2', 'b=3']);
    assert.equal(before.code, 1);
    assert.match(before.stderr, /^error: enqueue_error: Cannot enqueue on queue "default": no queue provider is registered .*svc worker add svc-queue/);

    const added = await svc(['worker', 'add', 'svc-queue']);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /✓ added svc-queue to config\.yaml[\s\S]*✓ svc-queue auto-started/);
    for (const w of ['svc-state', './workers/math-worker']) {
      const r = await svc(['worker', 'add', w], 240_000);
      assert.equal(r.code, 0, `svc worker add ${w}: ${r.stderr}`);
    }
    await until('svc-queue to serve', async () => (await svc(['queue', 'list'])).code === 0, 20_000);
    // Before: svc-queue's 13 functions, listed whole, made its row of `svc worker list` 260 wide.
    const workers = (await svc(['worker', 'list'])).stdout;
    assert.match(workers, /^svc-queue\s+builtin\s+.*\s+engine::queue::enqueue,iii::durable::publish,iii::queue::discard_message,… \+10 more\s+-$/m);
    assert.match(workers, /^svc-state\s+builtin\s+.*\s+state::delete,state::get,state::list,state::list_groups,state::set,state::update\s+-$/m);
    for (const line of workers.trimEnd().split('\n')) assert.ok(line.length <= 180, `${line.length} wide: ${line}`);

    const ok = await svc(['trigger', '--enqueue', 'default', 'math::add', 'a=2', 'b=3']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^\{"messageReceiptId":"[0-9a-f-]{36}"\}\n$/);
    await until('the job to be done', async () => (await queue('default')).completed! + (await queue('default')).dlq! >= 1, 30_000);
    const listed = await svc(['queue', 'list']);
    assert.match(listed.stdout, /QUEUE\s+WAITING\s+DELAYED\s+RUNNING\s+DLQ\s+COMPLETED\s+FAILED\n(default.*\n?)/);
    assert.ok(existsSync(join(project, 'data', 'queue', 'data.mdb')), 'the embedded store lives in data/queue beside config.yaml');

    const bad = await svc(['trigger', '--enqueue', 'default', 'math::add', 'a=x', 'b=2']);
    assert.equal(bad.code, 0, bad.stderr);
    const id = (JSON.parse(bad.stdout) as { messageReceiptId: string }).messageReceiptId;
    // Three runs, about 1 s and 2 s apart (the default queue's max_attempts and backoff).
    await until('the job to reach the DLQ', async () => (await queue('default')).dlq === 1, 30_000);
    const dlq = await svc(['queue', 'dlq', 'default']);
    assert.equal(dlq.code, 0, dlq.stderr);
    assert.match(dlq.stdout, new RegExp(`${id}\\s+math::add\\s+3\\s+.*invalid_payload: math::add: a must be a number, got 'x'`));
    assert.match(dlq.stdout, /1 dead-lettered job\(s\) in default/);
    const json = JSON.parse((await svc(['queue', 'dlq', 'default', '--json'])).stdout) as { total: number; jobs: Array<{ data: unknown; history: unknown[] }> };
    assert.equal(json.total, 1);
    assert.deepEqual(json.jobs[0]!.data, { a: 'x', b: 2 });
    assert.equal(json.jobs[0]!.history.length, 3);

    // Before: an id not in the DLQ printed "redriven 0 job(s) of default" and exit 0, as if done;
    // then the error came, still after "redriven 0". Now the error alone.
    const mistyped = await svc(['queue', 'redrive', 'default', '--id', 'no-such-job']);
    assert.equal(mistyped.code, 1);
    assert.equal(mistyped.stdout, '');
    assert.equal(mistyped.stderr, 'error: job_not_found: "no-such-job" is not in the dead-letter queue of default (svc queue dlq default lists it)\n');
    assert.equal((await queue('default')).dlq, 1);

    const redrive = await svc(['queue', 'redrive', 'default']);
    assert.equal(redrive.stdout.trim(), 'redriven 1 job(s) of default');
    await until('the redriven job to run three more times', async () => (await svc(['queue', 'dlq', 'default'])).stdout.includes(`${id}  math::add  6`), 30_000);
  });

  test('a queue that is not configured is refused; --set adds one', async () => {
    const refused = await svc(['trigger', '--enqueue', 'emails', 'math::add', 'a=1', 'b=1']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /error: enqueue_error: engine::queue::enqueue: queue "emails" is not configured; configured queues: default; add it to svc-queue's config \(svc worker add svc-queue --set queues\.emails\.max_attempts=3\)\n/);
    // svc-queue refused it on purpose (a QueueError, an SvcError): no stack trace travels, so none is
    // mentioned (before: "(svc-queue sent a stack trace: svc trigger --verbose)").
    assert.doesNotMatch(refused.stderr, /stack trace/);
    const set = await svc(['worker', 'add', 'svc-queue', '--set', 'queues.emails.max_attempts=5']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /✓ updated svc-queue in config\.yaml/);
    assert.match(readFileSync(join(project, 'config.yaml'), 'utf8'), /queues:\n\s+emails:\n\s+max_attempts: 5/);
    await until('svc-queue to serve the new queue', async () => (await svc(['trigger', '--enqueue', 'emails', 'math::add', 'a=1', 'b=1'])).code === 0, 30_000);
    const bad = await svc(['worker', 'add', 'svc-queue', '--set', 'queues.emails.max_attempts=0']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /"max_attempts" must be an integer from 1 to 1000, got 0 \(config\.yaml is unchanged\)/);
  });
});
