import { Args, Command, Flags } from '@oclif/core';
import { fail } from '../client.js';
import { usageFail } from '../usage-error.js';
import { DEFAULT_TEMPLATE, describeResult, scaffold, ScaffoldError, templateChoices } from '../scaffold.js';

export default class Create extends Command {
  static override summary = 'Create a project from a template (quickstart: a Python and a TypeScript worker).';
  static override description = `Copies templates/<template> of this svc checkout into DIRECTORY (or --directory; created when missing) and prints the files and the commands to run next. Each worker carries the svc SDK of its language as a built package in its vendor/ directory, named by a relative path, so the project installs on any machine with Python and Node (docs/deploy.md). The same as \`svc project init <name>\`.

Exit code 2 for an unknown template, or for a directory that is not empty (unless --force, which writes the template's files into it and replaces files with the same names).`;
  static override examples = [
    'svc create my-project',
    'svc create --template quickstart --directory my-project',
    'svc create --directory .    # into the current (empty) directory',
  ];
  static override args = {
    directory: Args.string({ description: 'Project directory to create (the same as --directory).', required: false }),
  };
  static override flags = {
    template: Flags.string({ char: 't', summary: `Template to use: ${templateChoices()}.`, default: DEFAULT_TEMPLATE }),
    directory: Flags.string({ char: 'd', summary: 'Project directory to create (default: ./<template>).' }),
    force: Flags.boolean({ char: 'f', summary: 'Write into a non-empty directory, replacing files of the same names.', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Create);
    if (args.directory !== undefined && flags.directory !== undefined && args.directory !== flags.directory) {
      usageFail('create', `two directories given: ${args.directory} and --directory ${flags.directory}; give one`);
    }
    try {
      const result = scaffold({ template: flags.template, target: args.directory ?? flags.directory ?? flags.template, force: flags.force });
      this.log(describeResult(result));
    } catch (e) {
      if (e instanceof ScaffoldError) fail(`${e.code}: ${e.message}`, 2);
      throw e;
    }
  }
}
