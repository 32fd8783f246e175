import type { Hook } from '@oclif/core';
import { closestKey } from 'svc-sdk/internal';
import { extraArgumentsLine } from '../usage-error.js';

/**
 * An unknown command: name it and the closest command or topic (`svc wrker list` → did you mean
 * "worker list"?; `svc stat` → "status"), then the way to list them all. Exit 2, as for any bad argument.
 * Words after a command that takes no arguments (`svc status extra`) are reported as such instead.
 */
const hook: Hook<'command_not_found'> = async function (opts) {
  const extra = extraArgumentsLine(opts.id, opts.config.commandIDs);
  if (extra !== undefined) {
    process.stderr.write(extra);
    process.exit(2);
  }
  const sep = opts.config.topicSeparator;
  const shown = (id: string): string => id.replaceAll(':', sep);
  const known = [...new Set([...opts.config.commandIDs, ...opts.config.topics.map((t) => t.name)])].map(shown);
  const asked = shown(opts.id);
  // A command cut short (`svc stat`) means the one command it begins, before the nearest by spelling (`start`).
  const begun = known.filter((k) => k.startsWith(asked));
  const near = (begun.length === 1 ? begun[0] : undefined) ?? closestKey(asked, known) ?? closestKey(asked.split(sep)[0]!, known);
  process.stderr.write(`error: unknown command "${asked}"${near ? ` (did you mean "${near}"?)` : ''}; svc --help lists the commands\n`);
  process.exit(2);
};

export default hook;
