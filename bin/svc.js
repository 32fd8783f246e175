#!/usr/bin/env node
// The svc CLI. `svc --config config.yaml` (or `svc -c …`) is the engine; everything else is a command.
import { Config, Errors, flush, handle, run } from '@oclif/core';

const args = process.argv.slice(2);
if (args.length > 0 && (args[0] === '-c' || args[0] === '--config' || args[0].startsWith('--config='))) args.unshift('start');
try {
  await run(args, import.meta.url);
  await flush();
} catch (error) {
  // A command line the parser refuses: one line, `error: invalid_argument: …` (src/cli/usage-error.ts).
  // A command's own exit (this.exit) goes straight to oclif.
  let line;
  if (!(error instanceof Errors.ExitError)) {
    try {
      const { usageErrorLine } = await import('../dist/src/cli/usage-error.js');
      line = usageErrorLine(error, args, (await Config.load(import.meta.url)).commandIDs);
    } catch {
      line = undefined;
    }
  }
  if (line === undefined) await handle(error);
  process.stderr.write(line);
  process.exit(2);
}
