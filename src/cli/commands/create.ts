import { Command, Flags } from '@oclif/core';
import { DEFAULT_TEMPLATE, describeResult, scaffold, ScaffoldError, templateChoices } from '../scaffold.js';

export default class Create extends Command {
  static override summary = 'Create a project from a template (quickstart: a Python and a TypeScript worker).';
  static override description = `Copies templates/<template> of this svc checkout into --directory (created when missing) and prints the files and the commands to run next. The workers' dependencies point at the SDKs of this checkout, since they are not published on a registry. The same as \`svc project init <name>\`.

Exit code 2 for an unknown template, or for a directory that is not empty (unless --force, which writes the template's files into it and replaces files with the same names).`;
  static override examples = [
    'svc create --template quickstart --directory my-project',
    'svc create --directory .    # into the current (empty) directory',
  ];
  static override flags = {
    template: Flags.string({ char: 't', summary: `Template to use: ${templateChoices()}.`, default: DEFAULT_TEMPLATE }),
    directory: Flags.string({ char: 'd', summary: 'Project directory to create (default: ./<template>).' }),
    force: Flags.boolean({ char: 'f', summary: 'Write into a non-empty directory, replacing files of the same names.', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Create);
    try {
      const result = scaffold({ template: flags.template, target: flags.directory ?? flags.template, force: flags.force });
      this.log(describeResult(result));
    } catch (e) {
      if (e instanceof ScaffoldError) this.error(e.message, { exit: 2, code: e.code });
      throw e;
    }
  }
}
