/**
 * One client, many connections: the calls a client has in flight are bounded over all its
 * connections (engine.limits.max_in_flight_per_client, max_in_flight_bytes_per_client;
 * src/engine/client-budgets.ts). Before, the bounds were per connection only, so a token holder
 * with four connections filled max_in_flight_bytes and every other caller got `overloaded`.
 * Real connections on loopback; a client is a token, a supervised instance, or (without tokens)
 * a remote address.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RUN_SECRET_HEADER } from 'svc-sdk/protocol';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep } from '../helpers/util.js';

const MiB = 1024 * 1024;
const token = (name: string, secret: string) => ({ name, token: secret, admin: true, call: [], register: [], trigger_types: [] });
const CALLEE = 'callee-secret-0123456789';
const GREEDY = 'greedy-secret-0123456789';
const OTHER = 'other-secret-01234567890';
const bearer = (secret: string) => ({ headers: { authorization: `Bearer ${secret}` } });
/** `list[i]`, which must be there. */
function nth<T>(list: T[], i: number): T {
  const v = list[i];
  assert.ok(v !== undefined, `no element ${i}`);
  return v;
}
type Result = { invocation_id?: string; error?: { code: string; message: string } };

/** Whether the call `id` sent on `c` is still in flight after a while (not answered, so not refused). */
async function inFlight(c: RawClient, id: string): Promise<boolean> {
  return !(await c.receives((f) => f.invocation_id === id, 300));
}

describe('calls in flight per client, over all its connections', () => {
  test("a token's connections together hold at most max_in_flight_bytes_per_client; other tokens' calls still start", async () => {
    const eng = await startEngine({ tokens: [token('callee', CALLEE), token('greedy', GREEDY), token('other', OTHER)], maxInFlightBytesPerClient: MiB });
    const callee = await RawClient.connect(eng.url, bearer(CALLEE));
    const greedy = await Promise.all([0, 1, 2, 3, 4].map(() => RawClient.connect(eng.url, bearer(GREEDY))));
    const other = await RawClient.connect(eng.url, bearer(OTHER));
    try {
      callee.send({ type: 'registerfunction', id: 'held::fn' });
      await sleep(50);
      const payload = 'h'.repeat(300 * 1024);
      // One call per connection: each connection is far under max_in_flight_bytes_per_worker (64 MiB).
      for (let i = 0; i < 4; i++) {
        nth(greedy, i).send({ type: 'invokefunction', invocation_id: `g${i}`, function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
        assert.ok(await inFlight(nth(greedy, i), `g${i}`), `g${i} starts`);
      }
      nth(greedy, 4).send({ type: 'invokefunction', invocation_id: 'g4', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      const r = (await nth(greedy, 4).next((f) => f.invocation_id === 'g4', 5000)) as Result;
      assert.equal(r.error?.code, 'overloaded');
      assert.match(r.error?.message ?? '', /^The calls the connections of token "greedy" have in flight carry \d+ bytes \(engine\.limits\.max_in_flight_bytes_per_client = 1048576\); retry later$/);
      // Another token's call of the same size starts.
      other.send({ type: 'invokefunction', invocation_id: 'o1', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      assert.ok(await inFlight(other, 'o1'), 'another client is not refused');
      assert.equal(eng.engine.invocations.size, 5);
      // One of greedy's calls ends: room for it again, on any of its connections.
      const inv = await callee.next((f) => f.type === 'invokefunction');
      callee.send({ type: 'invocationresult', invocation_id: inv.invocation_id, result: null });
      await eventually(() => assert.equal(eng.engine.invocations.size, 4));
      nth(greedy, 4).send({ type: 'invokefunction', invocation_id: 'g5', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      assert.ok(await inFlight(nth(greedy, 4), 'g5'), 'accepted again');
      // The budget goes with the client's last connection: nothing is kept per client that left.
      const clientsBefore = eng.engine.invocations.clients.size;
      for (const g of greedy) g.close();
      await eventually(() => assert.equal(eng.engine.invocations.clients.size, clientsBefore - 1));
    } finally {
      callee.close();
      for (const g of greedy) g.close();
      other.close();
      await eng.stop();
    }
  });

  test('counts are bounded per client too, fire-and-forget calls included (max_in_flight_per_client)', async () => {
    const eng = await startEngine({ tokens: [token('callee', CALLEE), token('greedy', GREEDY), token('other', OTHER)], maxInFlightPerClient: 4 });
    const callee = await RawClient.connect(eng.url, bearer(CALLEE));
    const a = await RawClient.connect(eng.url, bearer(GREEDY));
    const b = await RawClient.connect(eng.url, bearer(GREEDY));
    const other = await RawClient.connect(eng.url, bearer(OTHER));
    try {
      callee.send({ type: 'registerfunction', id: 'held::fn' });
      await sleep(50);
      // Two fire-and-forget calls and two awaited ones over two connections: four in flight.
      a.send({ type: 'invokefunction', function_id: 'held::fn', data: {} });
      b.send({ type: 'invokefunction', function_id: 'held::fn', data: {} });
      a.send({ type: 'invokefunction', invocation_id: 'a1', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      b.send({ type: 'invokefunction', invocation_id: 'b1', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      await eventually(() => assert.equal(eng.engine.invocations.size, 4));
      b.send({ type: 'invokefunction', invocation_id: 'b2', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      const r = (await b.next((f) => f.invocation_id === 'b2', 5000)) as Result;
      assert.equal(r.error?.code, 'overloaded');
      assert.equal(r.error?.message, 'The connections of token "greedy" have 4 calls in flight (engine.limits.max_in_flight_per_client = 4); retry later');
      other.send({ type: 'invokefunction', invocation_id: 'o1', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      assert.ok(await inFlight(other, 'o1'), 'another client is not refused');
      // A connection that leaves gives back the calls it awaited; its fire-and-forget call still
      // runs, and still counts.
      a.close();
      await eventually(() => assert.equal(eng.engine.invocations.size, 4));
      b.send({ type: 'invokefunction', invocation_id: 'b3', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      assert.ok(await inFlight(b, 'b3'), 'accepted again');
      b.send({ type: 'invokefunction', invocation_id: 'b4', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      assert.equal(((await b.next((f) => f.invocation_id === 'b4', 5000)) as Result).error?.code, 'overloaded');
      // Leaving and coming back does not reset the count: the two fire-and-forget calls still run.
      b.close();
      await eventually(() => assert.equal(eng.engine.invocations.size, 3));
      const c = await RawClient.connect(eng.url, bearer(GREEDY));
      try {
        for (const id of ['c1', 'c2']) c.send({ type: 'invokefunction', invocation_id: id, function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
        await eventually(() => assert.equal(eng.engine.invocations.size, 5));
        c.send({ type: 'invokefunction', invocation_id: 'c3', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
        assert.match(((await c.next((f) => f.invocation_id === 'c3', 5000)) as Result).error?.message ?? '', /have 4 calls in flight/);
      } finally {
        c.close();
      }
    } finally {
      callee.close();
      a.close();
      b.close();
      other.close();
      await eng.stop();
    }
  });

  test('without tokens a client is its remote address, and each instance the engine supervises is one of its own', async () => {
    const eng = await startEngine({ maxInFlightBytesPerClient: MiB });
    const callee = await RawClient.connect(eng.url);
    const local = await Promise.all([0, 1, 2, 3].map(() => RawClient.connect(eng.url)));
    const secret = eng.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica: 0 });
    const supervised = await RawClient.connect(eng.url, { headers: { [RUN_SECRET_HEADER]: secret } });
    try {
      callee.send({ type: 'registerfunction', id: 'held::fn' });
      await sleep(50);
      const payload = 'h'.repeat(300 * 1024);
      for (let i = 0; i < 3; i++) nth(local, i).send({ type: 'invokefunction', invocation_id: `l${i}`, function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      await eventually(() => assert.equal(eng.engine.invocations.size, 3));
      // The fourth pushes the address over the budget; the fifth is refused.
      nth(local, 3).send({ type: 'invokefunction', invocation_id: 'l3', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      await eventually(() => assert.equal(eng.engine.invocations.size, 4));
      nth(local, 3).send({ type: 'invokefunction', invocation_id: 'l4', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      const r = (await nth(local, 3).next((f) => f.invocation_id === 'l4', 5000)) as Result;
      assert.equal(r.error?.code, 'overloaded');
      assert.match(r.error?.message ?? '', /connections of address (127\.0\.0\.1|::ffff:127\.0\.0\.1) have in flight carry \d+ bytes \(engine\.limits\.max_in_flight_bytes_per_client = 1048576\)/);
      supervised.send({ type: 'invokefunction', invocation_id: 's1', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      assert.ok(await inFlight(supervised, 's1'), 'the supervised instance has a budget of its own');
    } finally {
      callee.close();
      for (const c of local) c.close();
      supervised.close();
      await eng.stop();
    }
  });
});
