import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { STAMP } from './log-stamp.js';

/** What a failure report shows of an instance's output: enough to name the error, bounded in lines and bytes. */
export const TAIL_LINES = 12;
export const TAIL_BYTES = 16 * 1024;
/** One line of it, cut: a minified stack or a JSON dump must not fill a terminal. */
const LINE_BYTES = 400;

/** The replica a `=== … starting <name>[ [replica N]]: …` line starts, or -1 for any other line. */
function startOf(line: string): number {
  if (!line.startsWith('=== ') || !line.includes(' starting ')) return -1;
  const m = / starting \S+ \[replica (\d+)\]: /.exec(line);
  return m ? Number(m[1]) : 0;
}

/**
 * The last lines replica `replica` of a worker wrote (the output of all its replicas goes to one log
 * file, each line stamped with its time and replica: log-stamp.ts), read from the end of its log
 * file at most TAIL_BYTES back and never before the `=== … starting` line of that replica's latest
 * start, so an exit is reported with the output of the run that exited, not of an earlier one or
 * another replica. The lines are given without their stamps, as the worker wrote them.
 */
export function lastOutputLines(logFile: string, replica = 0, maxLines = TAIL_LINES): string[] {
  let text: string;
  try {
    const size = statSync(logFile).size;
    const start = Math.max(0, size - TAIL_BYTES);
    const fd = openSync(logFile, 'r');
    try {
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      text = buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
    if (start > 0) text = text.slice(text.indexOf('\n') + 1);
  } catch {
    return [];
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  let mark = lines.length - 1;
  while (mark >= 0 && startOf(lines[mark]!) !== replica) mark--;
  const out: string[] = [];
  for (const l of lines.slice(mark + 1)) {
    const stamp = STAMP.exec(l);
    if (stamp) {
      // Blank lines say nothing and would take room in the tail.
      if (Number(stamp[1]) === replica && l.length > stamp[0].length && l.slice(stamp[0].length).trim() !== '') out.push(l.slice(stamp[0].length));
    } else if (startOf(l) === -1 && !l.startsWith('[install] ') && !l.startsWith('[build] ')) {
      out.push(l);
    }
  }
  return collapseFrames(out)
    .slice(-maxLines)
    .map((l) => (l.length > LINE_BYTES ? l.slice(0, LINE_BYTES) + '…' : l));
}

/** A JavaScript stack frame line (`    at fn (file:1:2)`). */
const FRAME = /^\s+at /;
/** Frames kept of each run: where it was thrown; the rest would push the error out of the tail. */
const FRAMES_KEPT = 2;

/**
 * Runs of JavaScript stack frames cut to their first FRAMES_KEPT lines and a count. A TypeScript
 * worker with a syntax error prints the error, then ten frames of esbuild's, then `Node.js v20…`:
 * a tail of its last 12 lines showed only the frames, never the error.
 */
function collapseFrames(lines: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    if (!FRAME.test(lines[i]!)) {
      out.push(lines[i++]!);
      continue;
    }
    let end = i;
    while (end < lines.length && FRAME.test(lines[end]!)) end++;
    const run = end - i;
    out.push(...lines.slice(i, i + (run > FRAMES_KEPT + 1 ? FRAMES_KEPT : run)));
    if (run > FRAMES_KEPT + 1) out.push(`    … ${run - FRAMES_KEPT} more frames`);
    i = end;
  }
  return out;
}

/** Lines around an error that do not say what it is: frames, Node's version trailer, its source-pointer lines. */
/** What collapseFrames leaves of a long run of frames. */
const COLLAPSED = /^\s+… \d+ more frames$/;
const NOISE = [/^\s*$/, FRAME, COLLAPSED, /^Node\.js v\d/, /^\s*\^+\s*$/, /^\s*triggerUncaughtException\(/, /^node:internal\//];

/**
 * The line of an exit's output that says what went wrong, for the one-line report (`exit code 1:
 * <line>`): the last line that is not a stack frame or Node's trailer. A Python traceback ends with
 * its error; Node's ends with `Node.js v20.20.2`, which the last line named instead. An error with
 * properties of its own (svc-sdk's InvocationError: `code`, `functionId`) is printed by Node with
 * them after its stack, in braces (`… {`, `  code: 'invalid_expression',`, `}`): the report named
 * the closing brace. The block is passed over to the error's line (its `{` cut).
 */
export function tellingLine(output: readonly string[]): string | undefined {
  for (let i = output.length - 1; i >= 0; i--) {
    let line = output[i]!;
    if (line === '}') {
      // Back over the block's indented property lines to where it opened: a frame (passed over
      // below, as frames are) or, for an error without frames, the error's own line.
      while (i > 0 && /^\s/.test(output[i - 1]!) && !FRAME.test(output[i - 1]!) && !COLLAPSED.test(output[i - 1]!)) i--;
      if (i === 0) return line;
      line = output[--i]!;
      if (line.endsWith(' {') && !FRAME.test(line)) return line.slice(0, -2);
    }
    if (!NOISE.some((re) => re.test(line))) return line;
  }
  return output.at(-1);
}
