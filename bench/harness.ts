/**
 * What bench/python-worker.ts, bench/state.ts and bench/http.ts share: child processes that announce
 * themselves on stdout, CPU time of a process from /proc, medians, the machine and its load.
 * (bench/run.ts and bench/tracing.ts predate it and keep their own copies.)
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/bench, where the compiled bench scripts live. */
export const HERE = dirname(fileURLToPath(import.meta.url));
/** The repository root (dist/bench/../..). */
export const ROOT = join(HERE, '..', '..');

export interface Proc {
  child: ChildProcess;
  /** Resolves with the rest of the first stdout line starting with `prefix` (a RegExp: the whole first line it matches). */
  line(prefix: string | RegExp, timeoutMs: number): Promise<string>;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

/** Spawn `command args`; `node` scripts are given as paths relative to dist/bench. */
export function start(command: string, args: string[], options: SpawnOptions = {}): Proc {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let buf = '';
  let err = '';
  let exited = false;
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    // Keep the tail only: a chatty child must not grow the bench's memory.
    err = (err + d).slice(-20_000);
  });
  const exit = new Promise<void>((resolve) => {
    const done = (): void => {
      exited = true;
      for (const w of waiters.splice(0)) w();
      resolve();
    };
    child.on('exit', done);
    child.on('error', (e) => {
      err += `\n${e.message}`;
      done();
    });
  });
  const name = `${command === process.execPath ? 'node' : command} ${args.join(' ')}`;
  return {
    child,
    stderr: () => err,
    line(prefix, timeoutMs) {
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`${name}: no "${String(prefix)}" line within ${timeoutMs} ms\n${err}`)), timeoutMs);
        const check = (): void => {
          const l = lines.find((x) => (typeof prefix === 'string' ? x.startsWith(prefix) : prefix.test(x)));
          if (l !== undefined) {
            clearTimeout(t);
            resolve(typeof prefix === 'string' ? l.slice(prefix.length).trim() : l);
          } else if (exited) {
            clearTimeout(t);
            reject(new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before "${String(prefix)}"\n${err}`));
          } else waiters.push(check);
        };
        check();
      });
    },
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exit;
      clearTimeout(t);
    },
  };
}

/** A compiled bench script (relative to dist/bench) in its own node process. */
export function startNode(script: string, args: string[], options: SpawnOptions = {}): Proc {
  return start(process.execPath, [join(HERE, script), ...args], options);
}

/** Stop every process, last started first. */
export async function stopAll(procs: Proc[]): Promise<void> {
  for (const p of [...procs].reverse()) await p.stop();
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** utime + stime of a process, in µs (resolution 1/CLK_TCK s); NaN when it is gone. */
export function cpuMicros(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
  } catch {
    return NaN;
  }
}

export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';

export function machine(): string {
  let model = cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) model = m[1]!.trim();
  } catch {
    /* not Linux */
  }
  return `${availableParallelism()} cores, ${model}, ${Math.round(totalmem() / 2 ** 30)} GiB, Linux ${release()}, node ${process.version}`;
}

export const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

export class UsageError extends Error {}

export interface RoundOptions {
  rounds: number;
  warmupMs: number;
  measureMs: number;
  inFlight: number;
}

/** --quick, --rounds N, --warmup MS, --measure MS, --in-flight N over the given defaults. */
export function parseRoundArgs(argv: string[], defaults: RoundOptions): RoundOptions {
  const o = argv.includes('--quick') ? { ...defaults, rounds: 1, warmupMs: 300, measureMs: 1000 } : { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') continue;
    const v = argv[++i];
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${a} needs a positive number, got ${v ?? 'nothing'}`);
    if (a === '--rounds') o.rounds = Math.round(n);
    else if (a === '--warmup') o.warmupMs = n;
    else if (a === '--measure') o.measureMs = n;
    else if (a === '--in-flight') o.inFlight = Math.round(n);
    else throw new UsageError(`unknown argument ${a} (known: --quick, --rounds N, --warmup MS, --measure MS, --in-flight N)`);
  }
  return o;
}

/**
 * Run `cell` for every key, interleaved per round with the order rotating (so no key always runs
 * first, after a pause, or last), and collect the samples per key.
 */
export async function interleave<K extends string, R>(keys: readonly K[], rounds: number, cell: (key: K, round: number) => Promise<R>, report: (key: K, round: number, r: R) => void): Promise<Map<K, R[]>> {
  const out = new Map<K, R[]>(keys.map((k) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < keys.length; j++) {
      const key = keys[(j + round) % keys.length]!;
      const r = await cell(key, round);
      out.get(key)!.push(r);
      report(key, round, r);
    }
  }
  return out;
}

/** Exit code 2 on a usage error, 1 on anything else. */
export function runMain(main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`bench: ${e.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
}

/**
 * The Python that runs bench workers: SVC_BENCH_PYTHON, or a venv at bench/out/python-venv made
 * with `pip install ./sdk/python`, again whenever sdk/python/pyproject.toml changed (workers run
 * with PYTHONPATH=sdk/python/src, so the working tree's SDK is what is measured, and the venv holds
 * its dependencies: a venv without uvloop would measure the asyncio loop without saying so).
 */
export function benchPython(): string {
  if (process.env.SVC_BENCH_PYTHON) return process.env.SVC_BENCH_PYTHON;
  const venv = join(ROOT, 'bench', 'out', 'python-venv');
  const py = join(venv, 'bin', 'python');
  const pyproject = readFileSync(join(ROOT, 'sdk', 'python', 'pyproject.toml'), 'utf8');
  const stamp = join(venv, 'svc-pyproject.toml');
  const made = existsSync(py);
  if (!made || !existsSync(stamp) || readFileSync(stamp, 'utf8') !== pyproject) {
    process.stdout.write(`${made ? 'updating' : 'creating'} ${venv} (pip install ./sdk/python) ...\n`);
    mkdirSync(join(ROOT, 'bench', 'out'), { recursive: true });
    for (const [cmd, args] of [
      ...(made ? [] : [['python3', ['-m', 'venv', venv]] as const]),
      [py, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', join(ROOT, 'sdk', 'python')]] as const,
    ]) {
      const r = spawnSync(cmd, args, { stdio: 'inherit' });
      if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}); set SVC_BENCH_PYTHON to a Python 3.11+ with websockets installed`);
    }
    writeFileSync(stamp, pyproject);
  }
  return py;
}
