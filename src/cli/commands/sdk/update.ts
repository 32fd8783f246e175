import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { Args, Command } from '@oclif/core';
import { SvcError } from 'svc-sdk';
import { loadConfig } from '../../../daemon/config-file.js';
import { parseWorkerEntries } from '../../../supervisor/worker-entries.js';
import { fail } from '../../client.js';
import { configFlag } from '../../project.js';
import { svcRoot } from '../../scaffold.js';
import { findWorkerDirs, vendorWorkers } from '../../vendor.js';

export default class SdkUpdate extends Command {
  static override summary = "Vendor this svc's SDKs into the project's workers (vendor/) and point their dependencies at them.";
  static override description = `For each worker directory (DIR..., or else every directory with an svc.worker.yaml under the
project's directory and every path worker of config.yaml), puts the SDK package of its language into
DIR/vendor/ (the wheel for python, the npm tarball for typescript; other versions there are removed)
and rewrites the one line naming svc-sdk in requirements.txt / package.json to its relative path.
Also turns a project made by an older svc (absolute paths to a checkout) into a portable one. Prints
what changed; run \`svc worker restart <name>\` (or re-add) for running workers to reinstall (a
changed package of the same version too: pip and npm are made to take it).
Exit 2 when a directory has no valid svc.worker.yaml or a package cannot be built.`;
  static override examples = ['svc sdk update', 'svc sdk update ./workers/math-worker'];
  static override strict = false;
  static override args = { dir: Args.string({ description: 'Worker directories (default: all of the project).' }) };
  static override flags = { config: configFlag };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(SdkUpdate);
    try {
      const dirs = (argv as string[]).length > 0 ? (argv as string[]).map((d) => resolve(d)) : projectWorkerDirs(resolve(flags.config));
      if (dirs.length === 0) fail(`no worker directory (with an svc.worker.yaml) under ${dirname(resolve(flags.config))}; pass worker directories`, 2);
      for (const v of vendorWorkers(dirs, svcRoot())) {
        const shown = relative(process.cwd(), v.dir) || '.';
        if (!v.changed) {
          this.log(`${shown}: up to date (${v.package})`);
          continue;
        }
        this.log(`${shown}: ${v.package}${v.removed.length ? ` (removed ${v.removed.join(', ')})` : ''}`);
        if (v.before !== v.after) this.log(`  ${v.dependencyFile}: ${v.before ?? '(none)'} → ${v.after}`);
        if (v.relocked) this.log(`  package-lock.json: the integrity of ${v.package} is now the new file's`);
        // The same version, other bytes: the worker's next install puts them in (supervisor/install.ts).
        const installed = ['.venv', 'node_modules'].find((d) => existsSync(join(v.dir, d)));
        // By hand: npm takes it (the lock's integrity is the new file's now); pip keeps an installed version unless forced.
        const byHand = installed === '.venv' ? `.venv/bin/pip install --force-reinstall --no-deps ./${v.package}` : 'npm install';
        if (v.before === v.after && installed) this.log(`  ${join(shown, installed)} holds the SDK installed before (same version): svc worker restart <name> installs this one (by hand: ${byHand})`);
      }
    } catch (e) {
      if (e instanceof SvcError) fail(`${e.code}: ${e.message}`, 2);
      throw e;
    }
  }
}

/** The project's worker directories: those under config.yaml's directory, and its path workers elsewhere. */
function projectWorkerDirs(configFile: string): string[] {
  const dirs = new Set(findWorkerDirs(dirname(configFile)));
  if (existsSync(configFile)) {
    for (const e of parseWorkerEntries(configFile, loadConfig(configFile, { create: false, engineEnv: 'optional' }).workers)) if (e.path && existsSync(resolve(e.path, 'svc.worker.yaml'))) dirs.add(e.path);
  }
  return [...dirs].sort();
}
