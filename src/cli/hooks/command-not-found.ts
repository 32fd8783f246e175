import type { Hook } from '@oclif/core';
import { closestKey } from 'svc-sdk/internal';
import { printable } from '../../engine/printable.js';
import { extraArgumentsLine } from '../usage-error.js';

/**
 * An unknown command: name it and the closest command or topic (`svc wrker list` → did you mean
 * "worker list"?; `svc stat` → "status"; `svc worker ad svc-state` → "worker add"), then the way to
 * list them all: `error: invalid_argument: unknown command …`, exit 2, as for any bad argument. Words after a command that takes no arguments
 * (`svc status extra`) are reported as such instead.
 */
const hook: Hook<'command_not_found'> = async function (opts) {
  const extra = extraArgumentsLine(opts.id, opts.config.commandIDs);
  if (extra !== undefined) {
    process.stderr.write(extra);
    process.exit(2);
  }
  const known = [...opts.config.commandIDs, ...opts.config.topics.map((t) => t.name)];
  process.stderr.write(unknownCommandLine(typedWords(process.argv.slice(2)), known));
  process.exit(2);
};

export default hook;

/**
 * The words of the command line before its first flag or key=value, as typed. oclif's `opts.id`
 * joins them with ':', which cannot be split again once a word holds '::' (`svc triger math::add`
 * came out as "triger math  add").
 */
export function typedWords(argv: readonly string[]): string[] {
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-') || a.includes('=')) break;
    words.push(a);
  }
  return words;
}

/**
 * The line for `words`, which name no command; `known` holds the command ids and topics (':'-joined).
 * What is named unknown is the known topic the words begin with, if any, plus the word after it
 * (`worker ad`, not `worker ad svc-state`); the suggestion is searched among that topic's commands.
 */
export function unknownCommandLine(words: readonly string[], known: readonly string[]): string {
  const ids = new Set(known);
  let depth = 0;
  while (depth < words.length - 1 && ids.has(words.slice(0, depth + 1).join(':'))) depth++;
  const shown = [...ids].map((id) => id.replaceAll(':', ' '));
  const topic = words.slice(0, depth).join(' ');
  const under = depth === 0 ? shown : shown.filter((k) => k.startsWith(`${topic} `));
  let asked = words.slice(0, depth + 1).join(' ');
  // A command cut short (`svc stat`) means the one command it begins, before the nearest by spelling (`start`).
  const begun = under.filter((k) => k.startsWith(asked));
  let near = begun.length === 1 ? begun[0] : undefined;
  // A misspelt topic with its command (`wrker list`): the two words together, when they are close to one.
  if (near === undefined && depth === 0 && words.length > 1) {
    const two = words.slice(0, 2).join(' ');
    near = closestKey(two, shown);
    if (near !== undefined) asked = two;
  }
  near ??= closestKey(asked, under) ?? closestKey(asked, shown);
  // The code every other refused command line has (usage-error.ts); what was typed is shown escaped.
  return printable(`error: invalid_argument: unknown command "${asked}"${near ? ` (did you mean "${near}"?)` : ''}; svc --help lists the commands`) + '\n';
}
