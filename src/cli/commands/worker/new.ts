import { relative } from 'node:path';
import { Args, Command, Flags } from '@oclif/core';
import { fail } from '../../client.js';
import { ScaffoldError } from '../../scaffold.js';
import { scaffoldWorker, WORKER_LANGUAGES, type WorkerLanguage } from '../../scaffold-worker.js';

export default class WorkerNew extends Command {
  static override summary = 'Create a worker directory: manifest, dependencies and one function, ready for `svc worker add`.';
  static override description = `Writes DIR/svc.worker.yaml, the dependencies (requirements.txt; package.json with svc-sdk and tsx,
tsconfig.json) naming this svc's SDK, built into DIR/vendor/, and a worker with one function <name>::hello.
The worker's name is DIR's last part unless --name says otherwise. Exit 2 for a non-empty DIR (unless
--force) or an invalid name.`;
  static override examples = ['svc worker new ./workers/greeter --language python', 'svc worker new ./workers/billing --language typescript --name billing-api'];
  static override args = { dir: Args.string({ required: true, description: 'Directory to create.' }) };
  static override flags = {
    language: Flags.string({ char: 'l', summary: 'Language of the worker.', options: [...WORKER_LANGUAGES], required: true }),
    name: Flags.string({ summary: "Worker name (default: DIR's last part)." }),
    force: Flags.boolean({ summary: 'Write into a non-empty directory, replacing files of the same names.', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerNew);
    try {
      const w = scaffoldWorker({ target: args.dir, language: flags.language as WorkerLanguage, ...(flags.name ? { name: flags.name } : {}), force: flags.force });
      const shown = relative(process.cwd(), w.target) || '.';
      const dir = shown.startsWith('.') || shown.startsWith('/') ? shown : `./${shown}`;
      this.log(`✓ created the ${w.language} worker ${w.name} in ${dir}:`);
      for (const f of w.files) this.log(`  ${f}`);
      this.log('');
      this.log('Next (with the engine running: svc --config config.yaml, or svc dev):');
      this.log(`  svc worker add ${dir}`);
      this.log(`  svc trigger ${w.name}::hello name=you`);
    } catch (e) {
      if (e instanceof ScaffoldError) fail(`${e.code}: ${e.message}`, 2);
      throw e;
    }
  }
}
