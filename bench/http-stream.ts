/**
 * `node dist/bench/http-stream.js [--mb 200] [--worker ts|py]` (issue 22 part 2): a download of N MB
 * streamed through svc-http's `response` channel, then an upload of the same N MB
 * (application/octet-stream) through its `request_body` channel, each byte-exact (sha256), with
 * the peak RSS of svc-http's and the engine's processes (and the Python worker's) while each runs.
 *
 * Processes: the engine (bench/engine.js), svc-http (its real process entry), the worker (it
 * writes a random N MB file to the channel, and hashes the upload): `ts` (default) this script on
 * svc-sdk, `py` bench/python_http_stream.py on svc_sdk (docs/http.md's Python examples; the
 * interpreter as for bench:python), and this script as the client (fetch). RSS is sampled from
 * /proc every 50 ms.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { registerWorker, type ChannelRef } from 'svc-sdk';
import { benchPython, ROOT, fmt, machine, runMain, start, startNode, stopAll, UsageError, type Proc } from './harness.js';

function rssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--mb');
  const mb = at === -1 ? 200 : Number(process.argv[at + 1]);
  const wat = process.argv.indexOf('--worker');
  const lang = wat === -1 ? 'ts' : process.argv[wat + 1];
  if (lang !== 'ts' && lang !== 'py') throw new UsageError(`--worker takes ts or py, got ${JSON.stringify(lang)}`);
  const py = lang === 'py' ? benchPython() : '';
  const dir = await mkdtemp(join(tmpdir(), 'svc-http-stream-bench-'));
  const file = join(dir, 'download.bin');
  const hash = createHash('sha256');
  const fh = await open(file, 'w');
  for (let i = 0; i < mb; i++) {
    const chunk = randomBytes(1024 * 1024);
    hash.update(chunk);
    await fh.write(chunk);
  }
  await fh.close();
  const expected = hash.digest('hex');

  const procs: Proc[] = [];
  try {
    const engine = startNode('engine.js', []);
    procs.push(engine);
    const url = await engine.line('READY ', 10_000);
    const http = start(process.execPath, [join(ROOT, 'dist', 'src', 'workers', 'http', 'main.js')], {
      env: { ...process.env, SVC_URL: url, SVC_WORKER_CONFIG: JSON.stringify({ host: '127.0.0.1', port: 0, request_log: false, timeout_ms: 600_000 }) },
    });
    procs.push(http);
    const base = (await http.line('svc-http listening on ', 15_000)).split(' ')[0]!;
    let worker: ReturnType<typeof registerWorker> | undefined;
    let pyPid: number | undefined;
    if (lang === 'ts') {
      const w = registerWorker(url, { workerName: 'bench-stream', echoLogs: false });
      worker = w;
      w.registerFunction('bench::download', async (req: { response: ChannelRef }) => {
        const out = w.openWriter(req.response);
        await out.sendText(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'application/octet-stream' } }));
        await pipeline(createReadStream(file), out);
        return null;
      });
      w.registerFunction('bench::upload', async (req: { request_body: ChannelRef }) => {
        const h = createHash('sha256');
        let bytes = 0;
        for await (const chunk of w.openReader(req.request_body)) {
          h.update(chunk as Buffer);
          bytes += (chunk as Buffer).length;
        }
        return { status_code: 200, body: { sha256: h.digest('hex'), bytes } };
      });
      await w.registerTrigger({ type: 'http', function_id: 'bench::download', config: { api_path: '/download', http_method: 'GET', stream: true } });
      await w.registerTrigger({ type: 'http', function_id: 'bench::upload', config: { api_path: '/upload', http_method: 'POST', stream: true } });
    } else {
      const pyWorker = start(py, [join(ROOT, 'bench', 'python_http_stream.py'), url, file], {
        env: { ...process.env, PYTHONPATH: join(ROOT, 'sdk', 'python', 'src') },
      });
      procs.push(pyWorker);
      pyPid = pyWorker.child.pid;
      await pyWorker.line('READY', 20_000);
    }
    // Bound once svc-http has both routes: a PUT then finds each path (405), not 404.
    const bound = async (): Promise<boolean> =>
      (await Promise.all(['/upload', '/download'].map(async (p) => (await fetch(`${base}${p}`, { method: 'PUT' })).status))).every((s) => s === 405);
    for (let t = 0; !(await bound()); t++) {
      if (t > 200) throw new Error('svc-http did not bind the routes within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    process.stdout.write(`worker: ${lang === 'ts' ? 'TypeScript (svc-sdk)' : `Python (svc_sdk, ${py})`}\n`);
    process.stdout.write(`${machine()}\n`);

    const pids = { engine: engine.child.pid, http: http.child.pid, worker: pyPid };
    const measure = async (what: string, run: () => Promise<boolean>): Promise<void> => {
      const base0 = { engine: rssMiB(pids.engine), http: rssMiB(pids.http), worker: rssMiB(pids.worker) };
      const peak = { ...base0 };
      const sampler = setInterval(() => {
        peak.engine = Math.max(peak.engine, rssMiB(pids.engine));
        peak.http = Math.max(peak.http, rssMiB(pids.http));
        peak.worker = Math.max(peak.worker, rssMiB(pids.worker));
      }, 50);
      const t0 = performance.now();
      const ok = await run();
      const seconds = (performance.now() - t0) / 1000;
      clearInterval(sampler);
      process.stdout.write(`${what} ${mb} MB: sha256 ${ok ? 'equal' : 'DIFFERENT'}, ${fmt(seconds, 1)} s (${fmt(mb / seconds, 0)} MB/s); `);
      process.stdout.write(`RSS MiB before → peak: svc-http ${fmt(base0.http, 0)} → ${fmt(peak.http, 0)}, engine ${fmt(base0.engine, 0)} → ${fmt(peak.engine, 0)}`);
      process.stdout.write(pids.worker ? `, Python worker ${fmt(base0.worker, 0)} → ${fmt(peak.worker, 0)}\n` : '\n');
      if (!ok) process.exitCode = 1;
    };
    await measure('download (response channel)', async () => {
      const res = await fetch(`${base}/download`);
      const got = createHash('sha256');
      let bytes = 0;
      for await (const chunk of res.body!) {
        got.update(chunk);
        bytes += chunk.length;
      }
      return res.status === 200 && got.digest('hex') === expected && bytes === mb * 1024 * 1024;
    });
    await measure('upload (request_body channel)', async () => {
      const init = { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: createReadStream(file), duplex: 'half' };
      const res = await fetch(`${base}/upload`, init as unknown as RequestInit);
      const got = (await res.json()) as { sha256?: string; bytes?: number };
      return res.status === 200 && got.sha256 === expected && got.bytes === mb * 1024 * 1024;
    });
    await worker?.shutdown();
  } finally {
    await stopAll(procs);
    await rm(dir, { recursive: true, force: true });
  }
}

runMain(main);
