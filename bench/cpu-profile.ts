/**
 * Where a process's CPU went, from a V8 `.cpuprofile` (node --cpu-prof): self time per function,
 * the largest first. Used by `npm run bench:queue -- --profile DIR`; also runnable on its own:
 *
 *   node dist/bench/cpu-profile.js <file.cpuprofile> [top N]
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  /** `function file:line`, or V8's pseudo-frames: (program), (garbage collector), (idle). */
  frame: string;
  ms: number;
  /** Share of the non-idle time. */
  share: number;
}

/** Self time per function of one profile, largest first, idle excluded from the shares. */
export function selfTimes(file: string): { busyMs: number; idleMs: number; top: SelfTime[] } {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const frameOf = new Map<number, string>();
  for (const n of p.nodes) {
    const f = n.callFrame;
    const where = f.url ? ` ${basename(f.url)}:${f.lineNumber + 1}` : '';
    frameOf.set(n.id, `${f.functionName || '(anonymous)'}${where}`);
  }
  const us = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const frame = frameOf.get(id) ?? '?';
    us.set(frame, (us.get(frame) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const idleUs = us.get('(idle)') ?? 0;
  us.delete('(idle)');
  const busyUs = [...us.values()].reduce((a, b) => a + b, 0);
  const top = [...us.entries()].sort((a, b) => b[1] - a[1]).map(([frame, t]) => ({ frame, ms: t / 1000, share: busyUs > 0 ? t / busyUs : 0 }));
  return { busyMs: busyUs / 1000, idleMs: idleUs / 1000, top };
}

/** A few lines: busy and idle time, then the `n` largest self times. */
export function summary(file: string, n = 15): string {
  const s = selfTimes(file);
  const lines = [`${basename(file)}: busy ${s.busyMs.toFixed(0)} ms, idle ${s.idleMs.toFixed(0)} ms`];
  for (const t of s.top.slice(0, n)) lines.push(`  ${(t.share * 100).toFixed(1).padStart(5)} %  ${t.ms.toFixed(0).padStart(6)} ms  ${t.frame}`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, n] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: cpu-profile.js <file.cpuprofile> [top N]\n');
    process.exit(2);
  }
  process.stdout.write(`${summary(file, n ? Number(n) : 15)}\n`);
}
