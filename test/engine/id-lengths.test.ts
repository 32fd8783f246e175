/**
 * Ids a registration names are bounded (MAX_ID_CHARS): the engine keeps them for the registration's
 * life outside max_stored_bytes_per_worker, so without a bound one connection's 10,000
 * registrations could each hold an id of max_frame_bytes (the built-ins fuzz test held 400 MB of
 * the engine with 40 parked bindings of 4 MB ids, 80 bytes of them charged).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let raw: RawClient;
before(async () => {
  eng = await startEngine();
  raw = await RawClient.connect(eng.url);
  raw.send({ type: 'hello', protocol: 1, features: ['cancel', 'ack'] });
});
after(async () => {
  raw.close();
  await eng.stop();
});

const long = (n: number, c = 'i') => c.repeat(n);

test('a binding whose id, trigger type or function id is over 1024 characters is refused with invalid_frame naming the field; 1024 is accepted', async () => {
  for (const [field, frame] of [
    ['id', { id: long(1025), trigger_type: 'nope-type', function_id: 'a::b' }],
    ['id', { id: long(4 * 1024 * 1024), trigger_type: 'nope-type', function_id: 'a::b' }],
    ['trigger_type', { id: 'b-2', trigger_type: long(5000), function_id: 'a::b' }],
    ['function_id', { id: 'b-3', trigger_type: 'nope-type', function_id: long(5000) }],
  ] as const) {
    raw.send({ type: 'registertrigger', config: {}, ...frame });
    const r = (await raw.next((f) => f.type === 'triggerregistrationresult' && f.id === frame.id, 10_000)) as { error?: { code: string; message: string } };
    assert.equal(r.error?.code, 'invalid_frame', field);
    assert.match(r.error!.message, new RegExp(`field "${field}" must be at most 1024 characters, got \\d+`));
  }
  raw.send({ type: 'registertrigger', id: long(1024), trigger_type: 'nope-type', function_id: 'a::b', config: {} });
  const ok = (await raw.next((f) => f.type === 'triggerregistrationresult' && f.id === long(1024))) as { error?: unknown; status?: string };
  assert.equal(ok.error, undefined);
  assert.equal(ok.status, 'parked');
  raw.send({ type: 'unregistertrigger', id: long(1024) });
});

test('a trigger type over 1024 characters is refused with invalid_frame and not listed', async () => {
  raw.send({ type: 'registertriggertype', id: long(2000, 't') });
  const e = (await raw.next((f) => f.type === 'error')) as { error: { code: string; message: string }; ref: { type: string; id: string } };
  assert.equal(e.error.code, 'invalid_frame');
  assert.match(e.error.message, /"registertriggertype" frame: field "id" must be at most 1024 characters, got 2000/);
  assert.equal(e.ref.id, long(128, 't'));
  const types = ((await eng.engine.invocations.call('engine::triggers::list', {})) as { trigger_types: Array<{ id: string }> }).trigger_types;
  assert.ok(!types.some((t) => t.id.startsWith('ttt')), 'the type was registered');
});

test('an observer whose id or function ids are over 1024 characters is refused with invalid_observer', async () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['id must be at most 1024', { id: long(3000, 'o'), source: { function_id: 'a::b' }, target: { function_id: 'c::d' } }],
    ['source.function_id must be at most 1024', { id: 'o-2', source: { function_id: long(3000) }, target: { function_id: 'c::d' } }],
    ['target.function_id must be at most 1024', { id: 'o-3', source: { function_id: 'a::b' }, target: { function_id: long(3000) } }],
  ];
  for (const [what, frame] of cases) {
    raw.send({ type: 'observe', ...frame });
    const r = (await raw.next((f) => f.type === 'observeresult' && f.id === frame.id)) as { state: string; error?: { code: string; message: string } };
    assert.equal(r.state, 'error', what);
    assert.equal(r.error?.code, 'invalid_observer', what);
    assert.ok(r.error!.message.includes(what), r.error!.message);
  }
});
