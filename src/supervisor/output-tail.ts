import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** What a failure report shows of an instance's output: enough to name the error, bounded in lines and bytes. */
export const TAIL_LINES = 12;
export const TAIL_BYTES = 16 * 1024;
/** One line of it, cut: a minified stack or a JSON dump must not fill a terminal. */
const LINE_BYTES = 400;

/**
 * The last lines a worker instance wrote (stdout and stderr go to the same log file), read from the
 * end of its log file at most TAIL_BYTES back and never before the `=== … starting` line of its
 * latest start, so an exit is reported with the output of the run that exited, not of an earlier one.
 */
export function lastOutputLines(logFile: string, maxLines = TAIL_LINES): string[] {
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
  while (mark >= 0 && !(lines[mark]!.startsWith('=== ') && lines[mark]!.includes(' starting '))) mark--;
  return lines
    .slice(mark + 1)
    .filter((l) => !l.startsWith('[install] '))
    .slice(-maxLines)
    .map((l) => (l.length > LINE_BYTES ? l.slice(0, LINE_BYTES) + '…' : l));
}
