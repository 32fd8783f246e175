/**
 * `npm run bench:jit`: the V8 optimisation probes of the call path's rare branches
 * (src/engine/hot/README.md, "Priming at load"). Each probe (bench/jit-probe.ts) runs twice, each
 * time in a fresh process: on the code as the engine and the SDK ship it, which must stay optimised
 * across its rare branch, and on an unprimed copy, which must deoptimise there (else the probe
 * could not see a failure). Exits 1, saying which probe failed and how, when any does.
 *
 * `npm run bench` runs these first and refuses to measure when one fails: a call path that
 * deoptimises at its 4096th call measures V8 recompiling it, not the engine.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { HERE, ROOT, runMain } from './harness.js';

/** V8's optimisation status bit "optimised" (%GetOptimizationStatus). */
const OPTIMIZED = 16;

interface Status {
  before: number;
  after: number;
}

export interface ProbeResult {
  name: string;
  what: string;
  primed: Status;
  control: Status;
  /** Why the probe failed; null when it passed. */
  failure: string | null;
}

function child(args: string[], natives: boolean): string {
  return execFileSync(process.execPath, [...(natives ? ['--allow-natives-syntax'] : []), join(HERE, 'jit-probe.js'), ...args], { cwd: ROOT, encoding: 'utf8' });
}

const optimised = (status: number): boolean => (status & OPTIMIZED) !== 0;

function verdict(primed: Status, control: Status): string | null {
  if (!optimised(primed.before) || !optimised(control.before)) return 'the probe could not get the function optimised before its rare branch';
  if (optimised(control.after)) return 'the unprimed copy stayed optimised: this probe cannot see a deoptimisation (has V8 changed?)';
  if (!optimised(primed.after)) return 'DEOPTIMISED at its rare branch: the priming at load is missing or no longer works';
  return null;
}

/** Every probe, in fresh processes. */
export function runJitProbes(): ProbeResult[] {
  const probes = JSON.parse(child(['--list'], false)) as Array<{ name: string; what: string }>;
  return probes.map(({ name, what }) => {
    const primed = JSON.parse(child([name, 'primed'], true)) as Status;
    const control = JSON.parse(child([name, 'control'], true)) as Status;
    return { name, what, primed, control, failure: verdict(primed, control) };
  });
}

/** The table of results, one line per probe. */
export function formatProbes(results: ProbeResult[]): string {
  const status = (s: Status): string => `${optimised(s.before) ? 'opt' : 'unopt'} → ${optimised(s.after) ? 'opt' : 'DEOPT'}`;
  return results.map((r) => `  ${r.failure ? 'FAIL' : 'ok  '} ${r.name.padEnd(13)} primed ${status(r.primed).padEnd(13)} control ${status(r.control).padEnd(13)} ${r.what}${r.failure ? `\n       ${r.failure}` : ''}`).join('\n');
}

/** Runs the probes and prints them; throws (with every failure) when any failed. */
export function checkJitProbes(): void {
  const results = runJitProbes();
  console.log(`V8 optimisation probes (src/engine/hot/README.md):\n${formatProbes(results)}`);
  const failed = results.filter((r) => r.failure !== null);
  if (failed.length > 0) throw new Error(`${failed.length} V8 optimisation probe(s) failed: ${failed.map((r) => `${r.name} (${r.failure})`).join('; ')}`);
}

if (process.argv[1] === join(HERE, 'jit-probes.js')) runMain(async () => checkJitProbes());
