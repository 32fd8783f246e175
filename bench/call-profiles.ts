/**
 * `npm run bench:profile`: where the routed call's time goes in each process (issue 21). Caller
 * (bench/caller.ts), engine (bench/engine.ts) and callee (bench/callee.ts), svc-sdk at default
 * options, each run under `node --cpu-prof`, one set of processes per number in flight; then
 * bench/cpu-profile.ts prints each profile's largest self times.
 *
 *   npm run bench:profile                          1, 64 and 256 in flight, 2 s warm-up + 4 s measured
 *   npm run bench:profile -- --in-flight 256 --top 25 --dir /tmp/prof
 *
 * The profiles cover each process's whole life (start-up and warm-up included), so shares are
 * indicative; the .cpuprofile files stay in the directory for Chrome DevTools.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, ROOT, load, machine, runMain, start, stopAll, UsageError, type Proc } from './harness.js';
import { summary } from './cpu-profile.js';

function parseArgs(argv: string[]): { inFlight: number[]; top: number; dir: string; warmupMs: number; measureMs: number } {
  const o = { inFlight: [1, 64, 256], top: 20, dir: join(ROOT, 'bench', 'out', 'profiles'), warmupMs: 2000, measureMs: 4000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[++i];
    if (v === undefined) throw new UsageError(`${a} needs a value`);
    if (a === '--dir') o.dir = v;
    else if (a === '--in-flight') o.inFlight = v.split(',').map(Number);
    else if (a === '--top') o.top = Number(v);
    else if (a === '--warmup') o.warmupMs = Number(v);
    else if (a === '--measure') o.measureMs = Number(v);
    else throw new UsageError(`unknown argument ${a} (known: --in-flight N[,N…], --top N, --dir DIR, --warmup MS, --measure MS)`);
  }
  if (o.inFlight.some((n) => !(n >= 1)) || !(o.top >= 1)) throw new UsageError('--in-flight and --top need positive numbers');
  return o;
}

async function profileAt(inFlight: number, o: ReturnType<typeof parseArgs>): Promise<Record<'engine' | 'callee' | 'caller', string>> {
  const dirs = { engine: '', callee: '', caller: '' };
  const procs: Proc[] = [];
  const node = (role: keyof typeof dirs, script: string, args: string[]): Proc => {
    dirs[role] = join(o.dir, `${inFlight}-${role}`);
    mkdirSync(dirs[role], { recursive: true });
    const p = start(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dirs[role], join(HERE, script), ...args]);
    procs.push(p);
    return p;
  };
  try {
    const engine = node('engine', 'engine.js', []);
    const url = await engine.line('READY ', 10_000);
    const callee = node('callee', 'callee.js', [url]);
    await callee.line('READY', 15_000);
    const caller = node('caller', 'caller.js', [url, String(inFlight), String(o.warmupMs), String(o.measureMs)]);
    process.stdout.write(`${inFlight} in flight: RESULT ${await caller.line('RESULT ', 30_000 + o.warmupMs + o.measureMs)}\n`);
    // Each writes its profile as it exits (the caller by itself after RESULT, the others on
    // SIGTERM), which takes seconds on a busy machine: longer than stop()'s grace before SIGKILL.
    await exitWithProfile(caller, false);
    await exitWithProfile(callee, true);
    await exitWithProfile(engine, true);
  } finally {
    await stopAll(procs);
  }
  const newest = (dir: string): string => join(dir, readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort().at(-1)!);
  return { engine: newest(dirs.engine), callee: newest(dirs.callee), caller: newest(dirs.caller) };
}

/** Wait (up to a minute) for `p` to exit, after SIGTERM when `signal`. */
function exitWithProfile(p: Proc, signal: boolean): Promise<void> {
  const c = p.child;
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 60_000);
    c.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    if (signal) c.kill('SIGTERM');
  });
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  process.stdout.write(`svc bench:profile: caller → engine → callee (svc-sdk at defaults) under --cpu-prof\nmachine: ${machine()}\nload average before: ${load()}\n\n`);
  for (const n of o.inFlight) {
    const files = await profileAt(n, o);
    for (const role of ['caller', 'engine', 'callee'] as const) process.stdout.write(`${role} at ${n} in flight — ${summary(files[role], o.top)}\n\n`);
  }
  process.stdout.write(`load average after: ${load()}\n`);
}

runMain(main);
