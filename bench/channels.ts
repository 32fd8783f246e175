/**
 * Channel throughput (issue 22): bytes through an svc channel (the engine relaying between a
 * writer and a reader socket) against a raw `ws` pipe (bench/channel-pipe.ts) in the same run.
 * Both servers are processes of their own; the writer and the reader are raw `ws` clients in this
 * process, the same code for both (a channel is plain WebSocket frames). Rounds alternate the
 * order. Also: the servers' peak RSS during a transfer, and a reader that reads nothing for 2 s
 * (how much the writer gets accepted, and the server's RSS meanwhile).
 *
 *   npm run build && node dist/bench/channels.js [MB per transfer, default 256] [rounds, default 3]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { channelUrl, registerWorker, type ChannelRef } from 'svc-sdk';

const MB = Number(process.argv[2] ?? 256);
const ROUNDS = Number(process.argv[3] ?? 3);
const FRAME = 64 * 1024;
const HIGH = 1024 * 1024;

async function server(script: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! });
  for await (const line of lines) if (line.startsWith('READY ')) return { proc, url: line.slice(6) };
  throw new Error(`${script} did not start`);
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Write `bytes` as 64 KiB frames, keeping at most HIGH unsent in the socket. */
async function write(ws: WebSocket, bytes: number, pauseMs = 0): Promise<void> {
  const chunk = Buffer.alloc(FRAME, 7);
  for (let sent = 0; sent < bytes; sent += FRAME) {
    if (ws.bufferedAmount > HIGH) await new Promise<void>((r) => ws.send(chunk, () => r()));
    else ws.send(chunk);
  }
  if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  ws.close(1000);
}

interface Pair {
  writer: string;
  reader: string;
}

async function transfer(pair: Pair, bytes: number, pid: number, readerStallMs = 0): Promise<{ mbps: number; peakRss: number; acceptedDuringStall?: number; rssDuringStall?: number }> {
  const reader = new WebSocket(pair.reader, { perMessageDeflate: false });
  const writer = new WebSocket(pair.writer, { perMessageDeflate: false });
  await Promise.all([once(reader, 'open'), once(writer, 'open')]);
  let got = 0;
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(pid))), 50);
  let stallReport: { acceptedDuringStall: number; rssDuringStall: number } | undefined;
  if (readerStallMs) {
    reader.pause();
    let accepted = 0;
    const counting = setInterval(() => (accepted = Math.max(accepted, (writer as unknown as { _socket: { bytesWritten: number } })._socket.bytesWritten)), 20);
    setTimeout(() => {
      clearInterval(counting);
      stallReport = { acceptedDuringStall: accepted / 1024 / 1024, rssDuringStall: rssMiB(pid) };
      reader.resume();
    }, readerStallMs);
  }
  const done = new Promise<void>((resolve) => reader.on('close', () => resolve()));
  reader.on('message', (d: Buffer) => (got += d.length));
  const t0 = performance.now();
  await write(writer, bytes);
  await done;
  const s = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  if (got < bytes) throw new Error(`reader got ${got} of ${bytes} bytes`);
  return { mbps: bytes / 1024 / 1024 / s, peakRss, ...stallReport };
}

const engine = await server('./engine.js');
const pipe = await server('./channel-pipe.js');
const client = registerWorker(engine.url, { workerName: 'bench-channels', echoLogs: false });
await client.ready();
let n = 0;
const makers: Record<string, () => Promise<Pair>> = {
  'ws pipe': async () => {
    const path = `${pipe.url}/p${n++}`;
    return { writer: `${path}?dir=write`, reader: `${path}?dir=read` };
  },
  'svc channel': async () => {
    const refs = await client.createChannel();
    return { writer: channelUrl(engine.url, refs.writer as ChannelRef), reader: channelUrl(engine.url, refs.reader as ChannelRef) };
  },
};
const pids: Record<string, number> = { 'ws pipe': pipe.proc.pid!, 'svc channel': engine.proc.pid! };
const results: Record<string, Array<{ mbps: number; peakRss: number }>> = { 'ws pipe': [], 'svc channel': [] };
// Warm-up: both relays' code optimised before anything is measured.
for (const name of Object.keys(makers)) await transfer(await makers[name]!(), 64 * 1024 * 1024, pids[name]!);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ['ws pipe', 'svc channel'] : ['svc channel', 'ws pipe'];
  for (const name of order) results[name]!.push(await transfer(await makers[name]!(), MB * 1024 * 1024, pids[name]!));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const name of Object.keys(results)) {
  const r = results[name]!;
  console.log(`${name.padEnd(12)} ${median(r.map((x) => x.mbps)).toFixed(0)} MiB/s (rounds: ${r.map((x) => x.mbps.toFixed(0)).join(', ')}), peak RSS ${Math.max(...r.map((x) => x.peakRss)).toFixed(0)} MiB`);
}
const ratios = results['svc channel']!.map((x, i) => x.mbps / results['ws pipe']![i]!.mbps);
console.log(`svc channel / ws pipe: median ${median(ratios).toFixed(2)}× (per round: ${ratios.map((x) => x.toFixed(2)).join(', ')})`);
const stall = await transfer(await makers['svc channel']!(), 64 * 1024 * 1024, pids['svc channel']!, 2000);
console.log(`slow reader (reads nothing for 2 s of a 64 MiB transfer): writer's socket wrote ${stall.acceptedDuringStall?.toFixed(1)} MiB meanwhile; engine RSS ${stall.rssDuringStall?.toFixed(0)} MiB (peak ${stall.peakRss.toFixed(0)} MiB)`);
await client.shutdown();
engine.proc.kill('SIGTERM');
pipe.proc.kill('SIGTERM');
