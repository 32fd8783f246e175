/**
 * Trigger bindings cannot bypass token scopes (issue 17, item 5): binding a trigger needs the
 * rights to observe what it observes, and what a provider runs for a binding (its condition, its
 * fire) runs with the binder's rights, never the provider's. A real engine with tokens, the real
 * svc-state (embedded store) and svc-http, workers on svc-sdk, raw peers for the protocol edges.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvocationError, type Worker } from 'svc-sdk';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../src/workers/http/worker.js';
import { adminToken, bindingRequires, token } from '../helpers/tokens.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

const ADMIN = 'admin-secret-0123456789';
const SPY = 'spy-secret-0123456789ab';
const WATCH = 'watch-secret-0123456789';
const MATH = 'math-secret-0123456789a';
const HTTP = 'http-secret-0123456789a';

describe('trigger bindings run with the binder’s rights', { timeout: 60_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let state: RunningStateWorker;
  let http: HttpWorkerHandle;
  let admin: Worker;
  let dir: string;
  const pool = new WorkerPool(() => eng.url);
  /** Calls of admin::allow, the condition only admins may call. */
  let allowCalls = 0;

  before(async () => {
    eng = await startEngine({
      tokens: [
        adminToken(ADMIN),
        token('spy', SPY, { register: ['spy::*'] }),
        token('watch', WATCH, { call: ['state::get', 'watch::*'], register: ['watch::*'] }),
        token('math', MATH, { register: ['math::*'] }),
        // svc-http may provide `http` and call nothing itself.
        token('http', HTTP, { trigger_types: ['http*'] }),
      ],
    });
    dir = mkdtempSync(join(tmpdir(), 'svc-trigger-rights-'));
    state = await startStateWorker({ url: `${eng.url}/?token=${ADMIN}`, config: { data_dir: dir } });
    http = await startHttpWorker({ url: `${eng.url}/?token=${HTTP}`, port: 0, requestLog: false });
    admin = pool.make('admin', { token: ADMIN });
    admin.registerFunction('admin::allow', () => {
      allowCalls++;
      return true;
    });
    await admin.ready();
  });
  after(async () => {
    await pool.closeAll();
    await http?.shutdown();
    await state?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the state type declares what a binder needs: state::get', async () => {
    assert.deepEqual(await bindingRequires(admin, 'state'), ['state::get']);
    assert.deepEqual(await bindingRequires(admin, 'http'), []);
  });

  test('a token that may not read state cannot bind a state trigger, and sees no write', async () => {
    const spy = pool.make('spy', { token: SPY });
    spy.on('error', () => {});
    const seen: unknown[] = [];
    spy.registerFunction('spy::see', (e: unknown) => {
      seen.push(e);
      return null;
    });
    await assert.rejects(spy.registerTrigger({ type: 'state', function_id: 'spy::see', config: {} }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'forbidden');
      assert.match(e.message, /Token "spy" may not bind a "state" trigger: binding one needs the right to call state::get/);
      return true;
    });
    await admin.trigger({ function_id: 'state::set', payload: { scope: 'bank', key: 'password', value: 'hunter2' } });
    await sleep(200);
    assert.deepEqual(seen, []);
    const { triggers } = await admin.trigger<{ triggers: Array<{ function_id: string }> }>({ function_id: 'engine::registered-triggers::list' });
    assert.ok(!triggers.some((t) => t.function_id === 'spy::see'), 'the refused binding is not kept');
  });

  test('a token with the right binds and receives the writes it matches', async () => {
    const watch = pool.make('watcher', { token: WATCH });
    const seen: Array<{ key: string; new_value: unknown }> = [];
    watch.registerFunction('watch::see', (e: { key: string; new_value: unknown }) => {
      seen.push(e);
      return null;
    });
    const t = await watch.registerTrigger({ type: 'state', function_id: 'watch::see', config: { scope: 'watched' } });
    await admin.trigger({ function_id: 'state::set', payload: { scope: 'watched', key: 'k', value: 1 } });
    await eventually(() => assert.deepEqual(seen.map((e) => [e.key, e.new_value]), [['k', 1]]));
    t.unregister();
  });

  test('a condition the binder may not call is refused, and the fire does not happen', async () => {
    const watch = pool.make('conditional', { token: WATCH });
    const fired: unknown[] = [];
    watch.registerFunction('watch::fired', (e: unknown) => {
      fired.push(e);
      return null;
    });
    let ownCondition = 0;
    watch.registerFunction('watch::cond', () => {
      ownCondition++;
      return true;
    });
    await watch.ready();
    const forbidden = await watch.registerTrigger({ type: 'state', function_id: 'watch::fired', config: { scope: 'cond', condition_function_id: 'admin::allow' } });
    await admin.trigger({ function_id: 'state::set', payload: { scope: 'cond', key: 'a', value: 1 } });
    await sleep(300);
    assert.equal(allowCalls, 0, 'svc-state did not call admin::allow for the binder');
    assert.deepEqual(fired, []);
    forbidden.unregister();
    // A condition the binder may call works as before.
    const allowed = await watch.registerTrigger({ type: 'state', function_id: 'watch::fired', config: { scope: 'cond', condition_function_id: 'watch::cond' } });
    await admin.trigger({ function_id: 'state::set', payload: { scope: 'cond', key: 'b', value: 2 } });
    await eventually(() => assert.equal(fired.length, 1));
    assert.equal(ownCondition, 1);
    allowed.unregister();
  });

  test('bindings parked before the provider came are checked when it comes', async () => {
    // A provider of a new type that asks binders for state::get arrives after the bindings.
    const spy = pool.make('early-spy', { token: SPY });
    const watch = pool.make('early-watch', { token: WATCH });
    const errors: Error[] = [];
    spy.on('error', (e: Error) => errors.push(e));
    spy.registerFunction('spy::early', () => null);
    watch.registerFunction('watch::early', () => null);
    await spy.registerTrigger({ type: 'audit', function_id: 'spy::early' }); // parked: no provider yet
    await watch.registerTrigger({ type: 'audit', function_id: 'watch::early' });
    const provider = await RawClient.connect(`${eng.url}/?token=${ADMIN}`);
    provider.send({ type: 'hello', protocol: 1, features: ['cancel', 'ack'] });
    provider.send({ type: 'registertriggertype', id: 'audit', binding_requires_call: ['state::get'] });
    const handed = await provider.next((f) => f.type === 'registertrigger');
    assert.equal(handed.function_id, 'watch::early', 'only the binding whose binder may read state is handed over');
    assert.equal(await provider.receives((f) => f.type === 'registertrigger', 300), false);
    const { triggers } = await admin.trigger<{ triggers: Array<{ function_id: string }> }>({ function_id: 'engine::registered-triggers::list' });
    assert.ok(!triggers.some((t) => t.function_id === 'spy::early'));
    provider.close();
  });

  test('only the binding’s provider may call for it, and never beyond its own rights', async () => {
    const math = pool.make('math', { token: MATH });
    math.registerFunction('math::double', (d: { x?: number; body?: { x: number } }) => (d.body ? { status_code: 200, body: d.body.x * 2 } : d.x! * 2));
    await math.ready();
    const provider = await RawClient.connect(`${eng.url}/?token=${HTTP}`);
    provider.send({ type: 'hello', protocol: 1, features: ['cancel', 'ack'] });
    provider.send({ type: 'registertriggertype', id: 'http' }); // a second provider of http: it holds the binding too (binding_mode all)
    const stranger = await RawClient.connect(`${eng.url}/?token=${ADMIN}`);
    const t = await math.registerTrigger({ type: 'http', function_id: 'math::double', config: { api_path: '/double', http_method: 'POST' } });
    // Another peer (even an admin) may not use the binding; an unknown binding is refused too.
    stranger.send({ type: 'invokefunction', invocation_id: 's1', function_id: 'math::double', binding_id: t.id, data: { x: 1 } });
    const notProvider = await stranger.next((f) => f.type === 'invocationresult' && f.invocation_id === 's1');
    assert.equal((notProvider.error as { code: string }).code, 'forbidden');
    assert.match((notProvider.error as { message: string }).message, new RegExp(`not the provider of trigger binding ${t.id}`));
    stranger.send({ type: 'invokefunction', invocation_id: 's2', function_id: 'math::double', binding_id: 'no-such-binding', data: { x: 1 } });
    const unknown = await stranger.next((f) => f.type === 'invocationresult' && f.invocation_id === 's2');
    assert.equal((unknown.error as { code: string }).code, 'binding_not_found');
    // svc-http, whose token may call nothing, serves the route: the binding authorizes the bound
    // function (its binder may register it).
    const res = await fetch(`http://127.0.0.1:${http.port}/double`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":21}' });
    assert.equal(res.status, 200);
    assert.equal(await res.json(), 42);
    // The provider itself, calling for a binding, gets nothing it may not call on its own.
    const http2 = await RawClient.connect(`${eng.url}/?token=${HTTP}`);
    http2.send({ type: 'registertriggertype', id: 'http2' });
    const bound = math.registerTrigger({ type: 'http2', function_id: 'math::double' });
    const handed = await http2.next((f) => f.type === 'registertrigger');
    http2.send({ type: 'triggerregistrationresult', id: handed.id, trigger_type: 'http2', function_id: 'math::double' });
    await bound;
    http2.send({ type: 'invokefunction', invocation_id: 'p1', function_id: 'engine::supervisor::list', binding_id: handed.id, data: {} });
    const beyond = await http2.next((f) => f.type === 'invocationresult' && f.invocation_id === 'p1');
    assert.equal((beyond.error as { code: string }).code, 'forbidden');
    http2.send({ type: 'invokefunction', invocation_id: 'p2', function_id: 'math::double', binding_id: handed.id, data: { x: 4 } });
    assert.equal((await http2.next((f) => f.type === 'invocationresult' && f.invocation_id === 'p2')).result, 8);
    provider.close();
    stranger.close();
    http2.close();
  });
});
