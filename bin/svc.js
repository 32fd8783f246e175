#!/usr/bin/env node
// The svc CLI. `svc --config config.yaml` (or `svc -c …`) is the engine; everything else is a command.
import { execute } from '@oclif/core';

const args = process.argv.slice(2);
if (args.length > 0 && (args[0] === '-c' || args[0] === '--config' || args[0].startsWith('--config='))) args.unshift('start');
await execute({ dir: import.meta.url, args });
