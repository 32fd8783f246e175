/**
 * The names of the engine and of its built-in workers (engine, svc-state, svc-http, svc-queue,
 * svc-cron) and of its own clients (svc-cli…, svc-console…) are refused to connections that do not
 * prove the right to them (issue 17, item 9): before, any token could call itself svc-state and
 * its functions appeared on svc-state's row of `svc worker list`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError, type Worker } from 'svc-sdk';
import { parseAuth } from '../../src/engine/config/auth-config.js';
import { connectionsOf } from '../../src/supervisor/control.js';
import { reservedNameRefusal } from '../../src/engine/worker-names.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
const ADMIN = 'admin-secret-0123456789';
const PLAIN = 'plain-secret-0123456789';
const BUILTINS = 'builtins-secret-0123456789';

/** The name the engine holds for `w`'s connection, asked by `observer` (a plain token may not call engine::*). */
async function nameOf(observer: Worker, w: Worker): Promise<string> {
  const info = (await observer.trigger({ function_id: 'engine::workers::info', payload: { worker_id: w.workerId } })) as { name: string };
  return info.name;
}

describe('reserved worker names', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  let admin: Worker;
  before(async () => {
    eng = await startEngine({
      tokens: [
        { name: 'admin', token: ADMIN, admin: true, call: [], register: [], trigger_types: [] },
        { name: 'plain', token: PLAIN, admin: false, call: ['*'], register: ['*'], trigger_types: ['*'] },
        { name: 'builtins', token: BUILTINS, admin: false, call: ['*'], register: ['*'], trigger_types: ['*'], names: ['svc-state'] },
      ],
    });
    admin = pool.make('observer', { token: ADMIN });
    await admin.ready();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a connection that proves nothing cannot call itself svc-state: error frame, engine log line, name kept anonymous', async () => {
    const errors: InvocationError[] = [];
    const w = pool.make('svc-state', { token: PLAIN });
    w.on('error', (e: InvocationError) => errors.push(e));
    w.registerFunction('state::get', () => 'forged');
    await w.ready();
    await eventually(() => assert.ok(errors.some((e) => e.code === 'reserved_name')));
    const e = errors.find((x) => x.code === 'reserved_name')!;
    assert.match(e.message, /Worker name "svc-state" is reserved for the engine's own svc-state worker/);
    assert.match(await nameOf(admin, w), /^anonymous-/);
    // Its functions stay registered (a name is not a permission), but never under svc-state.
    const list = (await admin.trigger({ function_id: 'engine::workers::list' })) as { workers: Array<{ name: string }> };
    assert.equal(list.workers.filter((x) => x.name === 'svc-state').length, 0);
    const logs = (await admin.trigger({ function_id: 'engine::logs::list', payload: { text: 'reserved' } })) as { logs: Array<{ message: string }> };
    assert.ok(logs.logs.some((l) => /engine::workers::register .* failed: Worker name "svc-state" is reserved/.test(l.message)), JSON.stringify(logs.logs));
  });

  test('variants that print alike are the same name: case, full-width letters, invisible characters', () => {
    for (const n of ['SVC-State', 'svc-state\u200b', ' svc-state', 'ｓｖｃ-state', 'Engine']) {
      assert.equal(reservedNameRefusal(n, null, null)?.code, 'reserved_name', n);
    }
    assert.equal(reservedNameRefusal('svc-stately', null, null), null);
    assert.equal(reservedNameRefusal('math-worker', null, null), null);
    assert.equal(reservedNameRefusal('svc-cli:123', null, null)?.code, 'reserved_name');
    assert.equal(reservedNameRefusal('svc-console:9', { kind: 'client' }, null), null);
    assert.equal(reservedNameRefusal('svc-state', { kind: 'client' }, null)?.code, 'reserved_name');
  });

  test('the instance the engine started as svc-state may use it; an instance of another worker may not', async () => {
    const own = pool.make('svc-state', { token: PLAIN, runSecret: eng.engine.run.issue({ kind: 'instance', worker: 'svc-state', replica: 0 }) });
    await own.ready();
    await eventually(async () => assert.equal(await nameOf(admin, own), 'svc-state'));
    const errors: InvocationError[] = [];
    const other = pool.make('svc-state', { token: PLAIN, runSecret: eng.engine.run.issue({ kind: 'instance', worker: 'math-worker', replica: 0 }) });
    other.on('error', (e: InvocationError) => errors.push(e));
    await other.ready();
    await eventually(() => assert.ok(errors.some((e) => e.code === 'reserved_name')));
    assert.match(await nameOf(admin, other), /^anonymous-/);
  });

  test('admin tokens may use reserved names (operators; built-ins run outside the supervisor, as in docker-compose.yml)', async () => {
    const w = pool.make('svc-http', { token: ADMIN });
    await w.ready();
    await eventually(async () => assert.equal(await nameOf(admin, w), 'svc-http'));
  });

  test('a token granted a reserved name (names:) may use that one only, as compose\'s services token does', async () => {
    const state = pool.make('svc-state', { token: BUILTINS });
    await state.ready();
    await eventually(async () => assert.equal(await nameOf(admin, state), 'svc-state'));
    const refused: InvocationError[] = [];
    const http = pool.make('svc-http', { token: BUILTINS });
    http.on('error', (e: InvocationError) => refused.push(e));
    await http.ready();
    await eventually(() => assert.ok(refused.some((e) => e.code === 'reserved_name')));
    assert.throws(
      () => parseAuth('c.yaml', { tokens: [{ name: 'x', token: 'x'.repeat(16), names: ['math-worker'] }] }),
      /engine\.auth\.tokens\[0\]\.names: must be a list of reserved worker names \(engine, svc-state, svc-http, svc-queue, svc-cron\)/,
    );
    assert.deepEqual(parseAuth('c.yaml', { tokens: [{ name: 'x', token: 'x'.repeat(16), names: ['svc-http'] }] })[0]!.names, ['svc-http']);
  });

  test('client names: the engine\'s own clients (client secret) keep svc-cli…, others do not', async () => {
    const cli = pool.make(`svc-cli:${process.pid}`, { token: PLAIN, role: 'client', runSecret: eng.engine.run.clientSecret });
    await cli.ready();
    await eventually(async () => assert.equal(await nameOf(admin, cli), `svc-cli:${process.pid}`));
    const fake = pool.make('svc-console:1', { token: PLAIN, role: 'client' });
    const refused: InvocationError[] = [];
    fake.on('error', (e: InvocationError) => refused.push(e));
    await fake.ready();
    await eventually(() => assert.ok(refused.some((e) => e.code === 'reserved_name')));
    assert.match(await nameOf(admin, fake), /^anonymous-/);
  });

  test('a caller that awaits engine::workers::register gets the refusal as its result too', async () => {
    const raw = await RawClient.connect(eng.url, { headers: { authorization: `Bearer ${PLAIN}` } });
    raw.send({ type: 'invokefunction', invocation_id: 'r1', function_id: 'engine::workers::register', data: { name: 'engine', runtime: 'x' } });
    const res = await raw.next((f) => f.type === 'invocationresult');
    assert.equal((res.error as { code: string }).code, 'reserved_name');
    raw.close();
  });
});

describe('svc worker list joins a supervised worker with the connections proven to be its instances', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a connection that only claims the name or the pid of a supervised worker is not on its row', async () => {
    const real = pool.make('math-worker', { runSecret: eng.engine.run.issue({ kind: 'instance', worker: 'math-worker', replica: 0 }) });
    real.registerFunction('math::add', () => 0);
    // Before: `svc worker list` joined by name, or by the pid a connection reports of itself.
    const impostor = pool.make('math-worker', { metadata: { pid: 4242 } });
    impostor.registerFunction('spy::add', () => 0);
    const otherInstance = pool.make('math-worker', { runSecret: eng.engine.run.issue({ kind: 'instance', worker: 'caller-worker', replica: 0 }) });
    otherInstance.registerFunction('caller::x', () => 0);
    await Promise.all([real.ready(), impostor.ready(), otherInstance.ready()]);
    await eventually(() => {
      const conns = connectionsOf(eng.engine, 'math-worker');
      assert.deepEqual(conns.map((s) => s.id), [real.workerId]);
      assert.deepEqual([...conns[0]!.functions], ['math::add']);
    });
    // A worker that cannot present a secret (an iii SDK program) is found by its name instead.
    const iii = pool.make('iii-worker');
    await iii.ready();
    await eventually(() => assert.deepEqual(connectionsOf(eng.engine, 'iii-worker').map((s) => s.id), [iii.workerId]));
  });
});
