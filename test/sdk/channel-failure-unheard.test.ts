/**
 * A channel that fails from its far side (an HTTP client hanging up on a streaming route, the
 * other worker dying) fails the side's writes and reads, but must not end the worker's process
 * when the handler attached no 'error' listener, as docs/http.md's SSE and download samples do
 * not: otherwise any client that disconnects mid-stream kills the worker and every call it runs.
 * Each side runs in a process of its own, so that an unhandled 'error' would show as its exit.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { registerWorker, type ChannelRef, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';

let engine: Awaited<ReturnType<typeof startEngine>>;
let w: Worker;

before(async () => {
  engine = await startEngine();
  w = registerWorker(engine.url, { workerName: 'peer', echoLogs: false });
});

after(async () => {
  await w?.shutdown();
  await engine?.stop();
});

/**
 * Runs `body` (ESM; `ref`, `url` and `report(line)` in scope, svc-sdk importable) in a child
 * process that exits 0 half a second after it reported; resolves with its exit code and output.
 */
function side(body: string, ref: ChannelRef, url: string): { ready: Promise<unknown>; done: Promise<{ code: number | null; out: string; err: string }> } {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { ChannelReader, ChannelWriter } from 'svc-sdk';
       const ref = JSON.parse(process.argv[1]), url = process.argv[2];
       let reported = false;
       const report = (line) => { if (reported) return; reported = true; process.stdout.write(line + '\\n'); setTimeout(() => process.exit(0), 500); };
       ${body}`,
      JSON.stringify(ref),
      url,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const ready = once(child.stdout!, 'data');
  const done = once(child, 'exit').then(([code]) => ({ code: code as number | null, out, err }));
  return { ready, done };
}

test('a writer without an error listener whose reader closes: its writes fail, its process lives on', async () => {
  const pair = await w.createChannel();
  const reader = w.openReader(pair.reader);
  // As the SSE sample: write every 20 ms, no 'error' listener; a write's callback sees the failure.
  const child = side(
    `const out = new ChannelWriter(ref, { url });
     process.stdout.write('open\\n');
     const timer = setInterval(() => out.write('data: tick\\n\\n', (e) => {
       if (e) { clearInterval(timer); report('failed ' + out.errored?.code); }
     }), 20);`,
    pair.writer,
    engine.url,
  );
  await once(reader, 'data');
  reader.destroy(); // the client went away
  const { code, out, err } = await child.done;
  assert.equal(code, 0, `the writer's process ended with ${code}: ${err}`);
  assert.match(out, /failed channel_reader_closed/);
});

test('a reader without an error listener whose writer aborts: it closes with the error, its process lives on', async () => {
  const pair = await w.createChannel();
  const writer = w.openWriter(pair.writer);
  writer.on('error', () => {});
  const child = side(
    `const input = new ChannelReader(ref, { url });
     input.on('data', () => process.stdout.write('data\\n'));
     input.on('close', () => report('closed ' + input.errored?.code));`,
    pair.reader,
    engine.url,
  );
  writer.write(Buffer.alloc(100));
  await child.ready;
  writer.destroy(); // the writer failed mid-stream
  const { code, out, err } = await child.done;
  assert.equal(code, 0, `the reader's process ended with ${code}: ${err}`);
  assert.match(out, /closed [a-z_]+/);
  assert.doesNotMatch(out, /closed undefined/);
});
