/**
 * The `log` trigger type the engine provides (src/engine/engine-triggers.ts) must not feed itself:
 * the lines a log fire causes (its handler's, the calls it makes, the engine's line that it
 * failed) fire no log binding, and lines × bindings fires in one turn are bounded. iii's payloads and constants: test/compat/iii-engine-triggers.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Logger, registerWorker, type Worker } from 'svc-sdk';
import { MAX_FIRES_PER_TURN } from '../../src/engine/engine-triggers.js';
import { startEngine } from '../helpers/engine.js';
import { eventually, sleep } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let w: Worker;

before(async () => {
  eng = await startEngine();
  w = registerWorker(eng.url, { workerName: 'log-loops', echoLogs: false });
  await w.ready();
});
after(async () => {
  await w?.shutdown();
  await eng?.stop();
});

test('log handlers that log or fail do not fire each other or themselves without end', { timeout: 30_000 }, async () => {
  const logger = new Logger(w, { echo: false });
  const seen: string[] = [];
  let failing = 0;
  let chatty = 0;
  // One fails (the SDK logs its error, the engine logs the failed fire); one logs two lines per line it is given.
  w.registerFunction('loop::failing', async (e: { body: string }) => {
    failing++;
    throw new Error(`failing on ${e.body.slice(0, 40)}`);
  });
  w.registerFunction('loop::chatty', async (e: { body: string }) => {
    chatty++;
    seen.push(e.body);
    logger.info('chatty one');
    logger.info('chatty two');
    return null;
  });
  w.registerFunction('loop::seed', async () => {
    logger.warn('seed line');
    return null;
  });
  await w.registerTrigger({ type: 'log', function_id: 'loop::failing', config: {} });
  await w.registerTrigger({ type: 'log', function_id: 'loop::chatty', config: {} });
  await w.trigger({ function_id: 'loop::seed', payload: {} });
  await eventually(() => assert.ok(seen.includes('seed line') && failing >= 1));
  await sleep(1500);
  // The seed line fires each handler once; nothing they cause fires again.
  assert.deepEqual([failing, chatty, seen], [1, 1, ['seed line']]);
});

test('log fires in one turn are bounded over all bindings: each binding gets the first lines', { timeout: 60_000 }, async () => {
  // Room for every fire in flight at once at the sink (the default per worker is 10,000).
  const own = await startEngine({ maxInFlightPerWorker: 50_000 });
  const fanout = registerWorker(own.url, { workerName: 'log-fanout', echoLogs: false });
  try {
    await fanout.ready();
    const BINDINGS = 150;
    const LINES = 100; // 15,000 fires asked for in one turn (one engine::log::batch call)
    const got = new Map<string, number>();
    let fired = 0;
    fanout.registerFunction('fanout::sink', async (e: { body: string }) => {
      fired++;
      got.set(e.body, (got.get(e.body) ?? 0) + 1);
      return null;
    });
    await Promise.all(Array.from({ length: BINDINGS }, () => fanout.registerTrigger({ type: 'log', function_id: 'fanout::sink', config: { level: 'warn' } })));
    const lines = Array.from({ length: LINES }, (_, i) => ({ level: 'warn', message: `fanout ${i}` }));
    await fanout.trigger({ function_id: 'engine::log::batch', payload: { lines } });
    await eventually(() => assert.equal(fired, MAX_FIRES_PER_TURN), 30_000);
    await sleep(500);
    assert.equal(fired, MAX_FIRES_PER_TURN);
    assert.equal(got.get('fanout 0'), BINDINGS, 'every binding has the first line');
    assert.equal(got.get(`fanout ${LINES - 1}`), undefined, 'the last lines are dropped');
  } finally {
    await fanout.shutdown();
    await own.stop();
  }
});
