import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { InvocationError } from 'svc-sdk';
import { EngineStartError } from '../../src/engine/server.js';
import { matches } from '../../src/engine/auth.js';
import { parseAuth } from '../../src/engine/config/auth-config.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
const ADMIN = 'admin-secret-0123456789';
const MATH = 'math-secret-0123456789';
const HTTP = 'http-secret-0123456789';

describe('tokens', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine({
      tokens: [
        { name: 'admin', token: ADMIN, admin: true, call: [], register: [], trigger_types: [] },
        { name: 'math', token: MATH, admin: false, call: ['math::*'], register: ['math::*'], trigger_types: [] },
        { name: 'http', token: HTTP, admin: false, call: [], register: [], trigger_types: ['http'] },
      ],
    });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a connection without a token is refused with a clear reason and sees nothing of the registry', async () => {
    const frames: string[] = [];
    const ws = new WebSocket(eng.url);
    ws.on('message', (d) => frames.push(d.toString()));
    const [code, reason] = await new Promise<[number, string]>((r) => ws.on('close', (c, why) => r([c, why.toString()])));
    assert.equal(code, 4401);
    assert.match(reason, /unauthorized: This engine requires a token/);
    assert.equal(frames.length, 1);
    const f = JSON.parse(frames[0]!) as { type: string; error: { code: string; message: string } };
    assert.equal(f.type, 'error');
    assert.equal(f.error.code, 'unauthorized');
    assert.match(f.error.message, /SVC_TOKEN/);
  });

  test('the SDK reports a missing or wrong token at once, as unauthorized', async () => {
    const none = pool.make('no-token');
    none.on('error', () => {});
    const t0 = Date.now();
    await assert.rejects(none.ready(5000), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'unauthorized');
      assert.match(e.message, /requires a token/);
      return true;
    });
    assert.ok(Date.now() - t0 < 2000);
    const wrong = pool.make('wrong-token', { token: 'not-the-right-one-at-all' });
    wrong.on('error', () => {});
    await assert.rejects(wrong.ready(5000), { code: 'unauthorized', message: /not valid/ });
  });

  test('a token given as ?token= works for clients that cannot set headers', async () => {
    const raw = await RawClient.connect(`${eng.url}/?token=${ADMIN}`);
    raw.send({ type: 'invokefunction', invocation_id: 'q', function_id: 'engine::health::check', data: {} });
    assert.equal(((await raw.next((f) => f.type === 'invocationresult')).result as { status: string }).status, 'ok');
    raw.close();
  });

  test('?token= takes a base64 token as pasted (+ kept), or percent-encoded', async () => {
    // `openssl rand -base64 24` (docs/security.md) makes tokens with + and /; form decoding read + as a space.
    const b64 = await startEngine({ tokens: [{ name: 'b64', token: 'oR+7IAyMRQ6F/mRCYSz+lvCZjFvR3LbE', admin: true, call: [], register: [], trigger_types: [] }] });
    try {
      for (const query of ['oR+7IAyMRQ6F/mRCYSz+lvCZjFvR3LbE', encodeURIComponent('oR+7IAyMRQ6F/mRCYSz+lvCZjFvR3LbE')]) {
        const raw = await RawClient.connect(`${b64.url}/?token=${query}`);
        raw.send({ type: 'invokefunction', invocation_id: 'q', function_id: 'engine::health::check', data: {} });
        const answer = await raw.next((f) => f.type === 'invocationresult' || f.type === 'error');
        assert.equal((answer.result as { status?: string } | undefined)?.status, 'ok', `${query}: ${JSON.stringify(answer)}`);
        raw.close();
      }
    } finally {
      await b64.stop();
    }
  });

  test('a token limited to math::* calls and registers math::* only', async () => {
    const admin = pool.make('admin-worker', { token: ADMIN });
    admin.registerFunction('state::get', () => 'secret state');
    admin.registerFunction('math::double', (d: { x: number }) => d.x * 2);
    await admin.ready();
    const math = pool.make('math-worker', { token: MATH });
    math.on('error', () => {});
    math.registerFunction('math::triple', (d: { x: number }) => d.x * 3);
    await math.ready();
    await eventually(async () => assert.equal(await math.trigger({ function_id: 'math::double', payload: { x: 2 } }), 4));
    await assert.rejects(math.trigger({ function_id: 'state::get', payload: {} }), { code: 'forbidden', message: 'Token "math" may not call state::get' });
    await assert.rejects(math.trigger({ function_id: 'engine::workers::list' }), { code: 'forbidden' });
    // What every worker needs stays open.
    assert.equal((await math.trigger<{ status: string }>({ function_id: 'engine::health::check' })).status, 'ok');
    await eventually(async () => assert.equal(await admin.trigger({ function_id: 'math::triple', payload: { x: 2 } }), 6));
    const raw = await RawClient.connect(eng.url, { headers: { authorization: `Bearer ${MATH}` } });
    raw.send({ type: 'registerfunction', id: 'admin::x' });
    const err = await raw.next((f) => f.type === 'error');
    assert.deepEqual(err.error, { code: 'forbidden', message: 'Token "math" may not register function admin::x' });
    raw.send({ type: 'registertriggertype', id: 'http' });
    assert.equal(((await raw.next((f) => f.type === 'error')).error as { code: string }).code, 'forbidden');
    raw.send({ type: 'registertrigger', id: 'b1', trigger_type: 'http', function_id: 'state::get', config: {} });
    const tr = await raw.next((f) => f.type === 'triggerregistrationresult');
    assert.equal((tr.error as { code: string }).code, 'forbidden');
    raw.close();
    await assert.rejects(admin.trigger({ function_id: 'admin::x' }), { code: 'function_not_found' });
  });

  test('a token may provide only its trigger types', async () => {
    const http = pool.make('http-provider', { token: HTTP });
    http.on('error', () => {});
    await http.registerTriggerType({ id: 'http' }, { registerTrigger: () => {}, unregisterTrigger: () => {} });
    await http.ready();
    const admin = pool.make('admin-lister', { token: ADMIN });
    await eventually(async () => {
      const t = (await admin.trigger({ function_id: 'engine::triggers::list' })) as { trigger_types: Array<{ id: string; provider: { worker_name: string } | null }> };
      assert.equal(t.trigger_types.find((x) => x.id === 'http')?.provider?.worker_name, 'http-provider');
    });
  });
});

describe('listening beyond loopback', () => {
  test('needs tokens', async () => {
    await assert.rejects(startEngine({ host: '0.0.0.0' }), (e: unknown) => {
      assert.ok(e instanceof EngineStartError);
      assert.equal(e.code, 'insecure_listen');
      assert.match(e.message, /no tokens are configured/);
      return true;
    });
    const eng = await startEngine({ host: '0.0.0.0', tokens: [{ name: 'a', token: ADMIN, admin: true, call: [], register: [], trigger_types: [] }] });
    await eng.stop();
  });
});

describe('resource bounds', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine({ maxConnections: 6, maxInFlightPerWorker: 3, maxRegistrationsPerWorker: 3, handshakeTimeoutMs: 300 });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('calls beyond the in-flight limit of a worker get overloaded, not a queue', async () => {
    const release: Array<() => void> = [];
    const slow = pool.make('bounded');
    slow.registerFunction('slow::hold', () => new Promise((r) => release.push(() => r('done'))));
    await slow.ready();
    const caller = pool.make('bounded-caller');
    await eventually(async () => assert.ok(await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'slow::hold' } })));
    const calls = Array.from({ length: 3 }, () => caller.trigger({ function_id: 'slow::hold' }));
    await eventually(() => assert.equal(release.length, 3));
    await assert.rejects(caller.trigger({ function_id: 'slow::hold' }), { code: 'overloaded', message: /max_in_flight_per_worker/ });
    for (const r of release) r();
    assert.deepEqual(await Promise.all(calls), ['done', 'done', 'done']);
    assert.equal(await Promise.race([caller.trigger({ function_id: 'slow::hold' }), sleep(50).then(() => 'pending')]), 'pending');
    release.at(-1)?.();
  });

  test('registrations beyond the limit are refused with too_many_registrations', async () => {
    const raw = await RawClient.connect(eng.url);
    for (const id of ['r::1', 'r::2', 'r::3', 'r::4']) raw.send({ type: 'registerfunction', id });
    const e = await raw.next((f) => f.type === 'error');
    assert.equal((e.error as { code: string }).code, 'too_many_registrations');
    assert.match((e.error as { message: string }).message, /Cannot register r::4/);
    raw.close();
  });

  test('connections beyond the limit are refused with overloaded', async () => {
    await eventually(() => assert.ok(eng.engine.sessionCount <= 2), 3000);
    const open: RawClient[] = [];
    while (eng.engine.sessionCount < 6) open.push(await RawClient.connect(eng.url));
    const ws = new WebSocket(eng.url);
    const first = await new Promise<string>((r) => ws.once('message', (d) => r(d.toString())));
    assert.equal((JSON.parse(first) as { error: { code: string } }).error.code, 'overloaded');
    for (const c of open) c.close();
  });

  test('a socket that never completes the upgrade is cut off after the handshake timeout', async () => {
    const sock = connect(eng.port, '127.0.0.1');
    sock.on('error', () => {});
    sock.resume(); // read the 408 answer, or 'close' never comes
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET / HTTP/1.1\r\nHost: x\r\n'); // headers never finished
    const closedAfter = await new Promise<number>((r) => {
      const t0 = Date.now();
      sock.once('close', () => r(Date.now() - t0));
    });
    assert.ok(closedAfter < 3000, `closed after ${closedAfter} ms`);
  });
});

describe('token configuration', () => {
  test('patterns: prefix and exact, and broad patterns never reach engine::', () => {
    assert.ok(matches('math::*', 'math::add'));
    assert.ok(!matches('math::*', 'mathx::add'));
    assert.ok(matches('math::add', 'math::add'));
    assert.ok(matches('*', 'state::get'));
    assert.ok(!matches('*', 'engine::supervisor::add'));
    assert.ok(matches('engine::*', 'engine::supervisor::add'));
  });
  test('values come from environment variables; errors name the key', () => {
    const t = parseAuth('c.yaml', { tokens: [{ name: 'a', token: '${TOK}', call: ['x::*'] }] }, { TOK: 'from-the-environment-123' });
    assert.equal(t[0]!.token, 'from-the-environment-123');
    assert.throws(() => parseAuth('c.yaml', { tokens: [{ name: 'a', token: '${NOPE}' }] }, {}), /engine\.auth\.tokens\[0\]\.token: environment variable NOPE is not set/);
    assert.throws(() => parseAuth('c.yaml', { tokens: [{ name: 'a', token: 'short' }] }, {}), /at least 16 characters/);
    assert.throws(() => parseAuth('c.yaml', { tokens: [{ name: 'a', token: ADMIN, calls: [] }] }, {}), /tokens\[0\]\.calls: unknown key/);
  });
});
