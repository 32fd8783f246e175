import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { printable } from '../engine/printable.js';
import { readEngineState, type EngineState } from '../daemon/engine-state.js';

/** `--config` as every project command takes it. */
export const configFlag = Flags.string({ char: 'c', summary: 'Path of config.yaml.', default: 'config.yaml' });

/**
 * What `svc status|stop|worker restart` say when no engine runs for `config` (as given): that there
 * is no such file at all, when so. Run outside the project, "No engine is running for config.yaml
 * (start it: svc --config config.yaml)" sent a new user to start an empty project where they stood.
 */
export function noEngineMessage(config: string, start: string): string {
  return noEngineError(config, start).message;
}

/** The same as an error of the CLI's (`error: <code>: <message>`): no such file, or no engine running. */
export function noEngineError(config: string, start: string): { code: string; message: string } {
  const file = resolve(config);
  if (!existsSync(file)) {
    return { code: 'invalid_config', message: `there is no ${config} in ${dirname(file)}: run this in your project's directory (the one holding config.yaml), or pass --config <path>` };
  }
  return { code: 'engine_not_running', message: `no engine is running for ${config}${start}` };
}

/** The engine running for this config.yaml, if any. */
export function runningEngine(configFile: string): EngineState | null {
  return readEngineState(resolve(configFile));
}

/**
 * A list cell of at most about `max` characters: the first items, then how many more (`… +9 more`).
 * svc-queue registers 13 functions: listed whole, they made one row of `svc worker list` 260 wide.
 */
export function shortList(items: readonly string[], max = 80): string {
  if (items.length === 0) return '-';
  let text = '';
  for (let i = 0; i < items.length; i++) {
    const next = text ? `${text},${items[i]}` : items[i]!;
    if (next.length > max && i > 0) return `${text},… +${items.length - i} more`;
    text = next;
  }
  return text;
}

/** Fixed-width table for terminal output; cells are escaped (they hold names and ids workers chose). */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  const cell = (v: unknown): string => printable(v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') || '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]): string => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n');
}
