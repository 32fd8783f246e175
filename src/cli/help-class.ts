/**
 * `svc … --help` and `svc help …`: oclif's help, with each command's description reflowed first.
 * The descriptions are written with line breaks at about 100 columns; oclif wraps them again at
 * the terminal's width (80 when not a terminal), which left every other line a few words long.
 */
import { Help, type Command } from '@oclif/core';

/**
 * Paragraphs (separated by blank lines) become one line each, except where a line break means
 * something: after a line ending with ':', before an indented line (an example) or an example
 * command (`svc …` after such a line or another one), and around a list: each item (`- …`)
 * starts a line, its indented continuation lines join it, and the first line after the list
 * starts a line again.
 */
export function reflow(text: string): string {
  const out: string[] = [];
  let inList = false;
  let inExamples = false;
  for (const raw of text.split('\n')) {
    const prev = out.at(-1);
    const item = /^[-*] /.test(raw);
    const indented = /^\s+\S/.test(raw);
    const example: boolean = raw.startsWith('svc ') && prev !== undefined && (/:$/.test(prev) || inExamples);
    let keepBreak: boolean;
    if (prev === undefined || prev === '' || raw.trim() === '') keepBreak = true;
    else if (item || example || /:$/.test(prev)) keepBreak = true;
    else keepBreak = inList ? !indented : indented;
    inExamples = example;
    if (item) inList = true;
    else if (raw.trim() === '' || (inList && !indented)) inList = false;
    if (keepBreak) out.push(raw);
    else out[out.length - 1] = `${prev} ${raw.trim()}`;
  }
  return out.join('\n');
}

export default class SvcHelp extends Help {
  protected override formatCommand(command: Command.Loadable): string {
    return super.formatCommand(command.description ? { ...command, description: reflow(command.description) } : command);
  }
}
