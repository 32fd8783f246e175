import { Command, Flags } from '@oclif/core';
import { InvocationError, type Worker } from 'svc-sdk';
import { printable, printableJson } from '../../engine/printable.js';
import { formatError } from '../client.js';
import { engineFlags, withEngine } from '../engine-flags.js';
import { listAll } from '../../engine/listing-pages.js';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** A line of `engine::logs::list`. */
export interface LogLine {
  seq: number;
  time: string;
  level: string;
  message: string;
  source: 'worker' | 'engine';
  worker_name?: string | null;
  function_id?: string | null;
  invocation_id?: string | null;
  trace_id?: string | null;
  data?: unknown;
}

/**
 * `<time> <LEVEL> <worker> [<function>] <message> [<data>] [trace=<id>]`: one line per entry, with
 * what a terminal would act on escaped (any worker chooses its name, messages and data).
 */
export function formatLogLine(l: LogLine): string {
  const who = l.source === 'engine' ? 'engine' : (l.worker_name ?? '-');
  const fn = l.function_id ? ` ${l.function_id}` : '';
  let data = '';
  // A failed call's stack trace (the engine's line for an exception in a handler): shown under the
  // line, each of its lines escaped behind a gutter, instead of as one JSON string.
  const stack = stackOf(l.data);
  if (stack !== undefined) {
    data = '';
  } else if (l.data !== undefined && l.data !== null) {
    try {
      data = ' ' + JSON.stringify(l.data);
    } catch {
      data = ' ' + String(l.data);
    }
  }
  const trace = l.trace_id ? ` trace=${l.trace_id}` : '';
  const line = printable(`${l.time} ${l.level.toUpperCase().padEnd(5)} ${who}${fn} ${l.message}${data}${trace}`);
  if (stack === undefined) return line;
  return [line, ...stack.replace(/\n+$/, '').split('\n').map((s) => `  │ ${printable(s)}`)].join('\n');
}

/** `data.stacktrace` when it is the only thing in `data`, else undefined. */
function stackOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const keys = Object.keys(data);
  const stack = (data as { stacktrace?: unknown }).stacktrace;
  return keys.length === 1 && typeof stack === 'string' ? stack : undefined;
}

export default class Logs extends Command {
  static override summary = 'Print the log lines the engine keeps: Logger lines of every worker and the engine\'s own events.';
  static override description = `Reads engine::logs::list. Each line: time, level, worker (or "engine"), function id when the
line was logged inside a call, message, data as JSON, and trace=<id> for lines of a traced call.
--level is a minimum (warn shows warn and error). With -f, new lines are printed as they arrive
until Ctrl-C; if the engine goes away, svc logs waits for it and goes on.`;
  static override examples = ['svc logs', 'svc logs -f --worker math-worker', 'svc logs --level warn -n 50', 'svc logs --text running_total --json'];
  static override flags = {
    follow: Flags.boolean({ char: 'f', summary: 'Keep printing new lines until Ctrl-C.', default: false }),
    worker: Flags.string({ char: 'w', summary: 'Only lines of this worker (name or id).' }),
    level: Flags.string({ char: 'l', summary: 'Minimum level.', options: [...LEVELS] }),
    text: Flags.string({ char: 't', summary: 'Only lines whose message contains this text.' }),
    lines: Flags.integer({ char: 'n', summary: 'Print at most the last N matching lines first.', default: 100, min: 1, max: 100_000 }),
    json: Flags.boolean({ summary: 'One JSON object per line instead of text.', default: false }),
    ...engineFlags,
    'interval-ms': Flags.integer({ summary: 'Polling period of --follow.', default: 500, min: 50 }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Logs);
    const filter = {
      ...(flags.worker ? { worker: flags.worker } : {}),
      ...(flags.level ? { level: flags.level } : {}),
      ...(flags.text ? { text: flags.text } : {}),
    };
    const print = (lines: LogLine[]): void => {
      if (lines.length === 0) return;
      process.stdout.write(lines.map((l) => (flags.json ? printableJson(JSON.stringify(l)) : formatLogLine(l)) + '\n').join(''));
    };
    const fetch = async (w: Worker, extra: Record<string, unknown>): Promise<LogLine[]> =>
      ((await w.trigger({ function_id: 'engine::logs::list', payload: { ...filter, ...extra }, timeoutMs: 5000 })) as { logs: LogLine[] }).logs;
    try {
      await withEngine(flags, async (w) => {
        const first = await fetch(w, { limit: flags.lines });
        if (flags.worker && first.length === 0) await this.checkWorker(w, flags.worker, flags.follow);
        print(first);
        if (!flags.follow) return;
        let last = first.at(-1)?.seq ?? (await this.latestSeq(w));
        let stopped = false;
        let lost = false;
        let dropped = false;
        w.on('disconnected', () => {
          dropped = true;
        });
        const stop = (): void => {
          stopped = true;
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        while (!stopped) {
          await new Promise((r) => setTimeout(r, flags['interval-ms']));
          if (stopped) break;
          try {
            if (dropped) {
              // A restarted engine numbers its lines from 1 again: then start over from its first line.
              dropped = false;
              if ((await this.latestSeq(w)) < last) last = 0;
            }
            const lines = await fetch(w, { since_seq: last, limit: 100_000 });
            if (lost) {
              process.stderr.write('svc logs: connected to the engine again\n');
              lost = false;
            }
            print(lines);
            if (lines.length > 0) last = lines.at(-1)!.seq;
          } catch (e) {
            if (!lost) process.stderr.write(`svc logs: ${formatError(e).replace(/^error: /, '')}; waiting for the engine…\n`);
            lost = true;
          }
        }
      });
    } catch (err) {
      process.stderr.write(formatError(err) + '\n');
      this.exit(1);
    }
  }

  /**
   * `-w <name>` that matches no line: say whether such a worker exists at all, instead of printing
   * nothing as if it had been quiet. Unknown: an error (exit 1), unless following, where it may
   * connect later: then a note.
   */
  private async checkWorker(w: Worker, worker: string, follow: boolean): Promise<void> {
    const workers = await listAll<{ worker_id: string; name: string }>((payload) => w.trigger({ function_id: 'engine::workers::list', payload }), 'workers');
    if (workers.some((x) => x.name === worker || x.worker_id === worker)) return;
    const names = [...new Set(workers.map((x) => x.name))].sort();
    const message = `no worker ${JSON.stringify(worker)} is connected and no line names it${names.length ? ` (connected: ${names.join(', ')})` : ''}`;
    if (!follow) throw new InvocationError('worker_not_found', message);
    process.stderr.write(`svc logs: ${printable(message)}; waiting for its lines…\n`);
  }

  /** The newest line's seq regardless of filters, so -f on an empty match starts from now. */
  private async latestSeq(w: Worker): Promise<number> {
    const { logs } = (await w.trigger({ function_id: 'engine::logs::list', payload: { limit: 1 }, timeoutMs: 5000 })) as { logs: LogLine[] };
    return logs.at(-1)?.seq ?? 0;
  }
}
