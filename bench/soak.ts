/**
 * `npm run bench:soak`: does the engine hold steady under hours-like traffic? The engine runs as its
 * own process (bench/soak-engine.ts); this process drives it for ~3 minutes with everything at once:
 *
 * - steady calls: 32 loops calling `soak::add` on a callee worker, back to back;
 * - churn: workers connecting, registering a function, calling it and leaving (half of them
 *   politely, half by cutting the socket), and raw connections sending a few frames then dropping;
 * - timeouts: calls of `soak::slow` (200 ms) with a 20 ms deadline (the callee gets `cancel`);
 * - errors: calls of missing functions, of `soak::fail` (throws), and malformed frames.
 *
 * The warm-up fills the engine's bounded rings (10,000 log lines, 20,000 trace spans) so that the
 * measurement sees leaks, not rings filling up. Memory is taken after two full GCs in the engine,
 * with the load paused, at the end of the warm-up and at the end of the run; open handles are the
 * engine's /proc/<pid>/fd entries at the same moments. Pass: RSS at the end within 20% of RSS after
 * the warm-up, and no more file descriptors. Exit status 1 on a failure.
 *
 *   npm run bench:soak                       30 s warm-up + 150 s run
 *   npm run bench:soak -- --quick            10 s + 30 s
 *   npm run bench:soak -- --warmup 60000 --measure 600000
 */
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { InvocationError, Logger, registerWorker, type Worker } from 'svc-sdk';
import { join } from 'node:path';
import { fmt, HERE, load, machine, runMain, start, UsageError, type Proc } from './harness.js';

interface Mem {
  rss: number;
  heapUsed: number;
  external: number;
  handles: number;
  sessions: number;
  in_flight: number;
}

function parseArgs(argv: string[]): { warmupMs: number; measureMs: number } {
  const o = argv.includes('--quick') ? { warmupMs: 10_000, measureMs: 30_000 } : { warmupMs: 30_000, measureMs: 150_000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') continue;
    const n = Number(argv[i + 1]);
    if ((a === '--warmup' || a === '--measure') && Number.isFinite(n) && n > 0) {
      o[a === '--warmup' ? 'warmupMs' : 'measureMs'] = n;
      i++;
    } else throw new UsageError(`unknown or incomplete argument ${a} (known: --quick, --warmup MS, --measure MS)`);
  }
  return o;
}

const fdCount = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;
const vmRss = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;
const mib = (b: number): string => fmt(b / 2 ** 20, 1);

const counts = { calls: 0, callErrors: 0, timeouts: 0, expectedErrors: 0, churnWorkers: 0, churnRaw: 0, unexpected: 0 };
const unexpected: string[] = [];
function surprise(what: string): void {
  counts.unexpected++;
  if (unexpected.length < 10) unexpected.push(what);
}

async function main(): Promise<void> {
  const { warmupMs, measureMs } = parseArgs(process.argv.slice(2));
  const eng = startEngineWithGc();
  const url = await eng.proc.line('READY ', 10_000);
  const pid = eng.proc.child.pid!;
  const quiet = { echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 500 } };

  const callee = registerWorker(url, { workerName: 'soak-callee', ...quiet });
  callee.registerFunction('soak::add', (d: { a: number; b: number }) => ({ c: d.a + d.b }));
  callee.registerFunction('soak::slow', async (_d: unknown, ctx) => {
    await sleep(200);
    return ctx.signal.aborted ? null : { late: true };
  });
  callee.registerFunction('soak::fail', () => {
    throw Object.assign(new Error('planned'), { code: 'planned_failure' });
  });
  const caller = registerWorker(url, { workerName: 'soak-caller', ...quiet, invocationTimeoutMs: 5000 });
  await caller.ready(10_000);
  for (let i = 0; ; i++) {
    try {
      await caller.trigger({ function_id: 'soak::add', payload: { a: 1, b: 1 } });
      break;
    } catch (e) {
      if (i > 200) throw e;
      await sleep(20);
    }
  }

  let running = true;
  const loops: Array<Promise<void>> = [];
  const startLoad = (): void => {
    running = true;
    loops.length = 0;
    for (let i = 0; i < 32; i++) loops.push(steady(caller, () => running));
    loops.push(timeoutsAndErrors(caller, () => running));
    for (let i = 0; i < 2; i++) loops.push(churnWorkers(url, i, () => running));
    loops.push(churnRaw(url, () => running));
  };
  const pauseLoad = async (): Promise<void> => {
    running = false;
    await Promise.all(loops);
    await sleep(1000); // closes and cancels settle in the engine
  };

  const timeline: string[] = [];
  const sampler = setInterval(() => {
    timeline.push(`${fmt((Date.now() - t0) / 1000)} s: rss ${mib(vmRss(pid))} MiB, fds ${fdCount(pid)}, calls ${counts.calls}`);
  }, 15_000);
  const t0 = Date.now();

  // ---- warm-up: fill the rings, then run the load ----
  const filler = new Logger(caller, { echo: false });
  for (let i = 0; i < 12_000; i++) filler.info(`warm-up line ${i}`, { i });
  startLoad();
  await sleep(warmupMs);
  await pauseLoad();
  const warm = await eng.mem();
  const warmFds = fdCount(pid);
  const warmCalls = counts.calls;
  process.stdout.write(`warm-up done: rss ${mib(warm.rss)} MiB, heap ${mib(warm.heapUsed)} MiB, fds ${warmFds}, ${warmCalls} calls\n`);

  // ---- the run ----
  const runStart = Date.now();
  startLoad();
  await sleep(measureMs);
  await pauseLoad();
  const runMs = Date.now() - runStart;
  clearInterval(sampler);
  const end = await eng.mem();
  const endFds = fdCount(pid);

  await callee.shutdown();
  await caller.shutdown();
  await eng.proc.stop();

  const rssRatio = end.rss / warm.rss;
  const heapRatio = end.heapUsed / warm.heapUsed;
  const runCalls = counts.calls - warmCalls;
  const pass = rssRatio <= 1.2 && endFds <= warmFds && end.in_flight === 0 && counts.unexpected === 0;
  const rows = [
    `| | after warm-up | after the run | end / warm-up |`,
    `|---|---|---|---|`,
    `| RSS (MiB, after GC) | ${mib(warm.rss)} | ${mib(end.rss)} | ${fmt(rssRatio, 3)} |`,
    `| V8 heap used (MiB, after GC) | ${mib(warm.heapUsed)} | ${mib(end.heapUsed)} | ${fmt(heapRatio, 3)} |`,
    `| open fds (/proc/<pid>/fd) | ${warmFds} | ${endFds} | ${endFds - warmFds >= 0 ? '+' : ''}${endFds - warmFds} |`,
    `| active handles (node) | ${warm.handles} | ${end.handles} | ${end.handles - warm.handles >= 0 ? '+' : ''}${end.handles - warm.handles} |`,
    `| sessions / calls in flight | ${warm.sessions} / ${warm.in_flight} | ${end.sessions} / ${end.in_flight} | |`,
  ];
  process.stdout.write(
    [
      '',
      `machine: ${machine()}; load average ${load()}`,
      `warm-up ${fmt(warmupMs / 1000)} s, run ${fmt(runMs / 1000)} s: ${fmt(runCalls)} calls in the run (${fmt(runCalls / (runMs / 1000))}/s), ` +
        `${counts.timeouts} timeouts, ${counts.expectedErrors} planned errors, ${counts.churnWorkers} worker and ${counts.churnRaw} raw connections churned in all, ` +
        `${counts.unexpected} unexpected outcomes${unexpected.length ? `: ${unexpected.join('; ')}` : ''}`,
      '',
      ...rows,
      '',
      `RSS over the run (no GC): ${timeline.join('; ')}`,
      '',
      `${pass ? 'PASS' : 'FAIL'}: RSS ${fmt((rssRatio - 1) * 100, 1)}% vs warm-up (limit +20%), fds ${endFds - warmFds >= 0 ? '+' : ''}${endFds - warmFds} (limit +0), in flight ${end.in_flight}, unexpected outcomes ${counts.unexpected}`,
      '',
    ].join('\n'),
  );
  if (!pass) process.exitCode = 1;
}

/** The engine with --expose-gc, and its memory probe (stdin `mem` → stdout `MEM {...}`). */
function startEngineWithGc(): { proc: Proc; mem(): Promise<Mem> } {
  const proc = start(process.execPath, ['--expose-gc', join(HERE, 'soak-engine.js')], { stdio: ['pipe', 'pipe', 'pipe'] });
  const pending: Array<(m: Mem) => void> = [];
  let buf = '';
  proc.child.stdout!.on('data', (d: Buffer | string) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith('MEM ')) pending.shift()?.(JSON.parse(line.slice(4)) as Mem);
    }
  });
  return {
    proc,
    mem: () =>
      new Promise<Mem>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`the engine did not answer the memory probe\n${proc.stderr()}`)), 10_000);
        pending.push((m) => {
          clearTimeout(t);
          resolve(m);
        });
        proc.child.stdin!.write('mem\n');
      }),
  };
}

async function steady(caller: Worker, on: () => boolean): Promise<void> {
  for (let n = 0; on(); n++) {
    try {
      const r = await caller.trigger<{ c: number }>({ function_id: 'soak::add', payload: { a: n, b: 1 } });
      if (r.c !== n + 1) surprise(`soak::add returned ${JSON.stringify(r)}`);
      counts.calls++;
    } catch (e) {
      counts.callErrors++;
      surprise(`soak::add failed: ${String(e)}`);
      await sleep(10);
    }
  }
}

async function expectError(p: Promise<unknown>, code: string): Promise<void> {
  try {
    await p;
    surprise(`a call expected to fail with ${code} succeeded`);
  } catch (e) {
    if (!(e instanceof InvocationError) || e.code !== code) surprise(`expected ${code}, got ${String(e)}`);
  }
}

async function timeoutsAndErrors(caller: Worker, on: () => boolean): Promise<void> {
  while (on()) {
    await Promise.all([
      expectError(caller.trigger({ function_id: 'soak::slow', timeoutMs: 20 }), 'timeout').then(() => counts.timeouts++),
      expectError(caller.trigger({ function_id: 'soak::fail' }), 'planned_failure').then(() => counts.expectedErrors++),
      expectError(caller.trigger({ function_id: `soak::missing-${Math.random()}` }), 'function_not_found').then(() => counts.expectedErrors++),
    ]);
    await sleep(20);
  }
}

/** Workers that come, register, call themselves and go; every other one leaves by cutting the socket. */
async function churnWorkers(url: string, loop: number, on: () => boolean): Promise<void> {
  for (let i = 0; on(); i++) {
    // A fresh id each time: a predecessor cut off abruptly may still be registered for a moment.
    const w = registerWorker(url, { workerName: `soak-churn-${loop}-${i}`, echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
    const fid = `soak::churn::${loop}-${i}`;
    w.registerFunction(fid, () => 'ok');
    try {
      await w.ready(5000);
      // Registration is asynchronous: retry until the engine has it.
      for (let k = 0; ; k++) {
        try {
          if ((await w.trigger({ function_id: fid, timeoutMs: 2000 })) !== 'ok') surprise(`${fid} answered wrongly`);
          break;
        } catch (e) {
          if (k > 50 || !(e instanceof InvocationError) || e.code !== 'function_not_found') throw e;
          await sleep(10);
        }
      }
    } catch (e) {
      surprise(`churn worker ${i}: ${String(e)}`);
    }
    if (i % 2 === 0) await w.shutdown();
    else {
      // An abrupt end: the socket is cut, no close handshake.
      (w as unknown as { conn?: { ws?: WebSocket } }).conn?.ws?.terminate();
      await w.shutdown();
    }
    counts.churnWorkers++;
    await sleep(20);
  }
}

/** Bare connections: a few valid and malformed frames, a call left in flight, then dropped. */
async function churnRaw(url: string, on: () => boolean): Promise<void> {
  while (on()) {
    const ws = new WebSocket(url);
    try {
      await new Promise<void>((resolve, reject) => {
        ws.once('message', () => resolve());
        ws.once('error', reject);
      });
      ws.send('{"type":"ping"}');
      ws.send('not json');
      ws.send('{"type":"registerfunction","id":42}');
      ws.send(JSON.stringify({ type: 'registerfunction', id: 'soak::raw' }));
      ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: 'left-open', function_id: 'soak::slow', data: {} }));
      await sleep(5);
    } catch (e) {
      surprise(`raw connection: ${String(e)}`);
    }
    ws.terminate();
    counts.churnRaw++;
    await sleep(30);
  }
}

runMain(main);
