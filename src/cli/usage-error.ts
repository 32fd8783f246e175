/**
 * A command line oclif's parser refuses (an unknown flag, a missing or unexpected argument, a flag
 * value of the wrong kind), as one line in the CLI's own form, `error: invalid_argument: …`, naming
 * the command and the offending input, instead of oclif's wrapped " ›   Error:" block followed by
 * the command's usage. bin/svc.js calls it with what `run` threw; anything else is left to oclif.
 */
import { Errors } from '@oclif/core';
import { printable } from '../engine/printable.js';

interface ParsedArg {
  name?: string;
  description?: string;
}

/** The command the line names: the longest run of leading words that is a command id. */
export function commandOf(argv: readonly string[], commandIds: readonly string[]): string | undefined {
  const ids = new Set(commandIds);
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-')) break;
    words.push(a);
  }
  for (let n = words.length; n > 0; n--) {
    const id = words.slice(0, n).join(':');
    if (ids.has(id)) return id;
  }
  return undefined;
}

/** The line for `what` is wrong with a command line of command `id` (undefined: not known). */
export function usageLine(id: string | undefined, what: string): string {
  const command = id ? `svc ${id.replaceAll(':', ' ')}` : 'svc';
  // What was typed is shown escaped: a flag name may hold control characters.
  return printable(`error: invalid_argument: ${command}: ${what}; ${command} --help shows its usage`) + '\n';
}

/** Print usageLine's line for a command line a command itself refuses (after oclif parsed it), and exit 2. */
export function usageFail(id: string, what: string): never {
  process.stderr.write(usageLine(id, what));
  process.exit(2);
}

/**
 * `svc worker list extra`: oclif looks for a command "worker:list:extra" when the command takes no
 * arguments. The line for that, when a leading part of `id` is a command; else undefined.
 */
export function extraArgumentsLine(id: string, commandIds: readonly string[]): string | undefined {
  const words = id.split(':');
  const command = commandOf(words.slice(0, -1), commandIds);
  if (command === undefined) return undefined;
  const extra = words.slice(command.split(':').length);
  return usageLine(command, unexpectedArguments(extra));
}

function unexpectedArguments(args: readonly string[]): string {
  return `unexpected argument${args.length === 1 ? '' : 's'} ${args.map((a) => JSON.stringify(a)).join(', ')}`;
}

/** One line for a parse error of `svc <argv>`; undefined when `err` is not one. */
export function usageErrorLine(err: unknown, argv: readonly string[], commandIds: readonly string[]): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const id = commandOf(argv, commandIds);
  const line = (what: string): string => usageLine(id, what);
  const e = err as Error & { args?: unknown[]; flags?: string[] };
  if (err instanceof Errors.CLIError && 'parse' in err) {
    switch (err.constructor.name) {
      case 'NonExistentFlagsError':
        return line(`unknown flag${e.flags!.length === 1 ? '' : 's'} ${e.flags!.join(', ')}`);
      case 'UnexpectedArgsError':
        return line(unexpectedArguments(e.args as string[]));
      case 'RequiredArgsError': {
        const missing = (e.args as ParsedArg[]).map((a) => `${(a.name ?? '').toUpperCase()}${a.description ? `, ${a.description.replace(/\.$/, '')}` : ''}`).join('; ');
        // `svc worker add --set port=1 svc-http`: a repeatable flag given took the argument as one of
        // its values. (oclif notes every repeatable flag the command has, given or not.)
        const noted = /Note: (--[\w-]+(?:, --[\w-]+)*) allows? multiple values/.exec(err.message)?.[1]?.split(', ') ?? [];
        const greedy = noted.filter((f) => argv.some((a) => a === f || a.startsWith(`${f}=`)));
        const hint = greedy.length ? ` (${greedy.join(', ')} takes every word after it: put the arguments first)` : '';
        return line(`missing argument ${missing}${hint}`);
      }
      default:
        return line(oneLine(err.message).replace(/^The following errors? occurred: /, ''));
    }
  }
  // The parser's plain CLIErrors: "Flag --config expects a value", "… can only be specified once".
  if (err instanceof Errors.CLIError && /^(Flag --|Unexpected flag )/.test(err.message)) return line(oneLine(err.message));
  // A flag's own parser failed (an integer flag given "abc"): oclif rewrites its message to
  // "Parsing --<flag> \n\t<reason>\nSee more help with --help".
  const flag = /^Parsing (--[\w-]+) \n\t([\s\S]*)$/.exec(err.message);
  if (flag) return line(`${flag[1]}: ${oneLine(flag[2]!)}`);
  return undefined;
}

/** oclif's multi-line message as one line, without its "See more help" tail. */
function oneLine(message: string): string {
  return message
    .replace(/\u001b\[[0-9;]*m/g, '')
    .replace(/\nSee more help with --help\s*$/, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ');
}
