/**
 * Time from `svc worker add` to the first successful call of the worker's function, for the
 * quickstart math-worker: with the docker runtime cold (no image: built from scratch, no layer
 * cache) and warm (image cached: container start only), against the process runtime (dependencies
 * already installed) measured in the same run as the baseline.
 *
 *   npm run build && node dist/bench/docker-startup.js [--rounds 3]
 *
 * Needs a Docker engine (scripts/start-dockerd.sh) and base images (scripts/build-base-images.sh).
 * Uses a fresh quickstart project in a temporary directory and an engine on a free port.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { registerWorker } from 'svc-sdk';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SVC = join(ROOT, 'bin', 'svc.js');
const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1] || 3) || 3;
const docker = new Docker({ socketPath: '/var/run/docker.sock' });

function svc(args: string[], cwd: string): void {
  const r = spawnSync(process.execPath, [SVC, ...args], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-docker-'));
  const proj = join(dir, 'proj');
  svc(['create', '-d', proj], dir);
  const engine = spawn(process.execPath, [SVC, 'start', '--config', 'config.yaml', '--port', '0'], { cwd: proj, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    engine.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /svc engine ready on (ws:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    engine.once('exit', () => reject(new Error(`engine exited: ${out}`)));
  });
  const caller = registerWorker(url, { workerName: 'bench-caller', echoLogs: false });
  try {
    svc(['worker', 'add', 'svc-state'], proj);
    /** Seconds from `svc worker add` to the first answered math::add. */
    const timeAdd = async (args: string[]): Promise<number> => {
      svc(['worker', 'remove', 'math-worker'], proj);
      const t0 = performance.now();
      svc(['worker', 'add', './workers/math-worker', ...args], proj);
      for (;;) {
        try {
          await caller.trigger({ function_id: 'math::add', payload: { a: 1, b: 2 }, timeoutMs: 2000 });
          return (performance.now() - t0) / 1000;
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    // Untimed first run of each: installs the process runtime's venv.
    svc(['worker', 'add', './workers/math-worker'], proj);
    const rows: Array<{ round: number; process: number; cold: number; warm: number }> = [];
    for (let round = 1; round <= rounds; round++) {
      const processS = await timeAdd([]);
      // Cold: no image of the worker, and --force builds without Docker's layer cache.
      for (const img of await docker.listImages({ filters: { reference: ['svc-worker-math-worker'] } })) {
        await docker.getImage(img.Id).remove({ force: true }).catch(() => undefined);
      }
      const cold = await timeAdd(['--runtime', 'docker', '--force']);
      const warm = await timeAdd(['--runtime', 'docker']);
      rows.push({ round, process: processS, cold, warm });
      process.stdout.write(`round ${round}: process ${processS.toFixed(2)} s, docker cold ${cold.toFixed(1)} s, docker warm ${warm.toFixed(2)} s\n`);
    }
    const med = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const p = med(rows.map((r) => r.process));
    const c = med(rows.map((r) => r.cold));
    const w = med(rows.map((r) => r.warm));
    process.stdout.write(
      [
        '',
        `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}, node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`,
        `| start of math-worker (median of ${rounds}) | seconds | × process runtime |`,
        '|---|---|---|',
        `| process runtime (venv installed) | ${p.toFixed(2)} | 1.0 |`,
        `| docker, warm (image cached) | ${w.toFixed(2)} | ${(w / p).toFixed(1)} |`,
        `| docker, cold (build, no cache) | ${c.toFixed(1)} | ${(c / p).toFixed(0)} |`,
        '',
      ].join('\n'),
    );
  } finally {
    await caller.shutdown();
    engine.kill('SIGTERM');
    await new Promise((r) => engine.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
