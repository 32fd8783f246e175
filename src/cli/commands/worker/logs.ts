import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fail } from '../../client.js';
import { Args, Command, Flags } from '@oclif/core';
import { logFileOf } from '../../../supervisor/launch.js';
import { notListedMessage, workerNamesIn } from '../../../supervisor/worker-entries.js';
import { configFlag } from '../../project.js';
import { printable } from '../../../engine/printable.js';

/** A line of the log file as the terminal may show it: what the worker wrote is kept raw in the file, and escaped here like every other client text the CLI prints (a worker's `\x1b[2J` must not clear the user's screen). */
const shown = (line: string): string => printable(line) + '\n';

export default class WorkerLogs extends Command {
  static override summary = "Print a worker's stdout and stderr, each line with its time and replica (kept in .svc/logs/<name>.log beside config.yaml).";
  static override examples = ['svc worker logs math-worker', 'svc worker logs math-worker -f', 'svc worker logs svc-http -n 20'];
  static override args = { name: Args.string({ required: true, description: 'Worker name.' }) };
  static override flags = {
    config: configFlag,
    follow: Flags.boolean({ char: 'f', summary: 'Keep printing new lines.', default: false }),
    lines: Flags.integer({ char: 'n', summary: 'Print the last N lines first.', default: 200, min: 0 }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerLogs);
    const file = logFileOf(resolve(flags.config), args.name);
    if (!existsSync(file)) {
      if (!existsSync(resolve(flags.config))) fail(`invalid_config: ${resolve(flags.config)}: file not found`, 2);
      const names = workerNamesIn(resolve(flags.config));
      // A name config.yaml does not list is most likely mistyped: say which one it lists instead.
      if (!names.includes(args.name)) fail(`worker_not_found: ${notListedMessage(args.name, names, resolve(flags.config))}`, 1);
      fail(`no logs for worker ${args.name} (${file} does not exist; has it been started?)`, 1);
    }
    const size = statSync(file).size;
    // Read only the tail so a large log prints quickly.
    const start = Math.max(0, size - 256 * 1024);
    const text = readRange(file, start, size);
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (start > 0) lines.shift();
    // Each start's "=== … starting" header follows a blank line that separates it from the run
    // before; the first run has none before it.
    else if (lines[0] === '') lines.shift();
    process.stdout.write(lines.slice(-flags.lines).map(shown).join(''));
    if (!flags.follow) return;
    let pos = size;
    let partial = '';
    await new Promise<void>((done) => {
      const t = setInterval(() => {
        const now = existsSync(file) ? statSync(file).size : 0;
        if (now < pos) pos = 0; // truncated or replaced
        if (now > pos) {
          // Lines are escaped whole: a line still being written waits for its newline.
          const more = (partial + readRange(file, pos, now)).split('\n');
          partial = more.pop() ?? '';
          process.stdout.write(more.map(shown).join(''));
          pos = now;
        }
      }, 250);
      process.once('SIGINT', () => {
        clearInterval(t);
        done();
      });
    });
  }
}

function readRange(file: string, start: number, end: number): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(end - start);
    readSync(fd, buf, 0, buf.length, start);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}
