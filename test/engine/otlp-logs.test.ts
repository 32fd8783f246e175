/**
 * Logger lines that iii SDKs send as OTLP-JSON logs (binary frames `LOGS` + JSON) on the `/otel`
 * socket or a worker's own: stored as the engine's log lines, within its budgets, and nothing such
 * a frame holds can stop the engine. The published SDKs send them for real in
 * sdk/python/tests/test_iii_matrix.py (every PyPI release).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let reader: Worker;
const MAX_VALUE = 1024;
const MAX_FRAME = 64 * 1024;

before(async () => {
  eng = await startEngine({ maxStoredValueBytes: MAX_VALUE, maxFrameBytes: MAX_FRAME });
  reader = registerWorker(eng.url, { workerName: 'log-reader', echoLogs: false });
  await reader.ready();
});
after(async () => {
  await reader?.shutdown();
  await eng?.stop();
});

interface Line {
  level: string;
  message: string;
  worker_name?: string;
  worker_id?: string;
  trace_id?: string;
  data?: unknown;
}
const lines = async (text: string): Promise<Line[]> => ((await reader.trigger({ function_id: 'engine::logs::list', payload: { text } })) as { logs: Line[] }).logs;

/** An OTLP-JSON logs request as iii's SDKs write it (resource, scope, records; ids as hex). */
function logsFrame(records: Array<Record<string, unknown>>, serviceName = 'iii-python-sdk'): Buffer {
  const req = {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: serviceName } }] },
        scopeLogs: [{ scope: { name: 'iii.logger', version: '' }, logRecords: records }],
      },
    ],
  };
  return Buffer.concat([Buffer.from('LOGS'), Buffer.from(JSON.stringify(req))]);
}
const attr = (key: string, value: unknown) => ({ key, value });

async function otelSocket(): Promise<WebSocket> {
  const ws = new WebSocket(`${eng.url}/otel`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return ws;
}

test('an iii Logger line on /otel is stored with its level, data, name and trace id', async () => {
  const ws = await otelSocket();
  ws.send(
    logsFrame([
      {
        timeUnixNano: '1700000000000000000',
        severityNumber: 13,
        severityText: 'WARN',
        body: { stringValue: 'otel-warn line' },
        attributes: [
          attr('service.name', { stringValue: 'orders' }),
          attr('log.data', { kvlistValue: { values: [attr('order', { intValue: '42' }), attr('tags', { arrayValue: { values: [{ stringValue: 'a' }, { boolValue: true }] } })] } }),
        ],
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
      },
      { severityNumber: 17, body: { stringValue: 'otel-error line' }, attributes: [] },
      // npm's Logger: the ids repeated as attributes, intValue a number, no record traceId.
      {
        severityNumber: 9,
        body: { stringValue: 'otel-info line' },
        attributes: [attr('trace_id', { stringValue: '188D82285A0C4D6B0000000000000001' }), attr('span_id', { stringValue: '35b30ea8df0d16e9' }), attr('log.data', { kvlistValue: { values: [attr('k', { intValue: 1 })] } })],
      },
      { severityNumber: 5, body: { stringValue: 'otel-debug line' }, traceId: '00000000000000000000000000000000' },
    ]),
  );
  await eventually(async () => assert.equal((await lines('otel-')).length, 4));
  const [warn, error, info, debug] = await lines('otel-');
  assert.deepEqual(
    { level: warn!.level, message: warn!.message, worker_name: warn!.worker_name, trace_id: warn!.trace_id, data: warn!.data },
    { level: 'warn', message: 'otel-warn line', worker_name: 'orders', trace_id: '0af7651916cd43dd8448eb211c80319c', data: { order: 42, tags: ['a', true] } },
  );
  assert.deepEqual([error!.level, error!.worker_name, error!.data], ['error', 'iii-python-sdk', null], 'named by the resource when the line has no service.name');
  assert.deepEqual([info!.level, info!.trace_id, info!.data], ['info', '188d82285a0c4d6b0000000000000001', { k: 1 }], 'trace_id and span_id attributes are not data');
  assert.deepEqual([debug!.level, debug!.trace_id], ['debug', null], 'an all-zero trace id is no trace');
  ws.close();
});

test('a LOGS frame on a worker connection is that worker\'s line', async () => {
  const raw = await RawClient.connect(eng.url);
  raw.ws.send(logsFrame([{ severityText: 'INFO', body: { stringValue: 'own-socket line' } }]));
  await eventually(async () => assert.equal((await lines('own-socket')).length, 1));
  const [line] = await lines('own-socket');
  assert.equal(line!.worker_id, raw.registered.worker_id);
  raw.close();
});

test('bad telemetry frames are dropped, values over the budget are cut, the engine keeps serving', async () => {
  const ws = await otelSocket();
  const deep = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'bad-deep' }, attributes: [attr('log.data', JSON.parse('{"kvlistValue":{"values":[{"key":"k","value":'.repeat(200) + '{"stringValue":"x"}' + '}]}}'.repeat(200)))] }] }] }] });
  const frames: Array<Buffer | string> = [
    Buffer.from('LOGS{not json'),
    Buffer.from('LOGS[1,2,3]'),
    Buffer.from('LOGS{"resourceLogs":"x"}'),
    Buffer.from('LOGS{"resourceLogs":[null,{"scopeLogs":[{"logRecords":[null,7,{"body":null},{"attributes":"x"}]}]}]}'),
    Buffer.concat([Buffer.from('OTLP'), Buffer.from('{"resourceSpans":[]}')]),
    Buffer.from('LOG'),
    logsFrame([{ body: { stringValue: 'bad-toolarge ' + 'x'.repeat(MAX_FRAME) } }]),
    logsFrame([{ body: { stringValue: 'bad-long ' + 'y'.repeat(4 * MAX_VALUE) }, attributes: [attr('log.data', { stringValue: 'z'.repeat(4 * MAX_VALUE) })] }]),
    Buffer.concat([Buffer.from('LOGS'), Buffer.from(deep)]),
    'a text frame on /otel',
  ];
  for (const f of frames) ws.send(f);
  await eventually(async () => assert.equal((await lines('bad-')).length, 2));
  const [long, deepLine] = await lines('bad-');
  assert.match(long!.message, /^bad-long y+… \[svc_truncated: message of \d+ characters, over engine\.limits\.max_stored_value_bytes = 1024\]$/);
  assert.match(String(long!.data), /\[svc_truncated: data of/);
  assert.equal(deepLine!.message, 'bad-deep');
  assert.match(JSON.stringify(deepLine!.data), /nested too deep/);
  assert.deepEqual(await reader.trigger({ function_id: 'engine::health::check' }).then((h) => (h as { status: string }).status), 'ok');
  ws.close();
});
