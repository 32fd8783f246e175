// Writes oclif.manifest.json (the last step of `npm run build`): every command's id, flags, args and
// help, and the file it lives in. Without it oclif imports all 28 command modules (and so the
// engine, redis and OpenTelemetry) on every `svc` run just to list them: `svc trigger` spent about
// 1.1 s of CPU starting, 0.4 s with the manifest, and the test suite runs svc some hundreds of times.
// Made from the built dist/ each build, so it never describes other commands than the ones built;
// oclif reads it only when its version matches package.json's.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Plugin } from '@oclif/core';

const root = fileURLToPath(new URL('..', import.meta.url));
// ignoreManifest: read the commands themselves, not an older manifest; errorOnManifestCreate: a
// command that fails to load fails the build instead of going missing from the manifest.
const plugin = new Plugin({ root, isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
await plugin.load();
const count = Object.keys(plugin.manifest.commands).length;
if (count === 0) throw new Error(`no commands found under ${root}dist/src/cli/commands: run tsc first`);
writeFileSync(new URL('../oclif.manifest.json', import.meta.url), `${JSON.stringify(plugin.manifest)}\n`);
