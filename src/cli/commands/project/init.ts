import { fail } from '../../client.js';
import { usageFail } from '../../usage-error.js';
import { Args, Command, Flags } from '@oclif/core';
import { DEFAULT_TEMPLATE, describeResult, scaffold, ScaffoldError, templateChoices } from '../../scaffold.js';

export default class ProjectInit extends Command {
  static override summary = 'Create the project ./<name> from a template (same as `svc create --directory <name>`).';
  static override description = `Copies templates/<template> of this svc checkout into ./<name> and prints the files and the commands to run next. Each worker carries the svc SDK of its language as a built package in its vendor/ directory (docs/deploy.md).

Exit code 2 for an unknown template, or for a directory that is not empty (unless --force, which writes the template's files into it and replaces files with the same names).`;
  static override examples = ['svc project init my-project', 'svc project init my-project --template quickstart --force'];
  static override args = {
    name: Args.string({ description: 'Name of the project directory to create.', required: true }),
  };
  static override flags = {
    template: Flags.string({ char: 't', summary: `Template to use: ${templateChoices()}.`, default: DEFAULT_TEMPLATE }),
    force: Flags.boolean({ char: 'f', summary: 'Write into a non-empty directory, replacing files of the same names.', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(ProjectInit);
    if (args.name.trim() === '') usageFail('project:init', 'the project name must not be empty');
    try {
      const result = scaffold({ template: flags.template, target: args.name, force: flags.force });
      this.log(describeResult(result));
    } catch (e) {
      if (e instanceof ScaffoldError) fail(`${e.code}: ${e.message}`, 2);
      throw e;
    }
  }
}
