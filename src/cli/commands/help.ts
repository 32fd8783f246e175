import { Command, loadHelpClass } from '@oclif/core';

export default class HelpCommand extends Command {
  static override summary = 'Show help for svc or for a command: svc help worker add.';
  static override examples = ['svc help', 'svc help worker add', 'svc help cron'];
  static override strict = false;

  async run(): Promise<void> {
    const { argv } = await this.parse(HelpCommand);
    const SvcHelp = await loadHelpClass(this.config);
    await new SvcHelp(this.config).showHelp(argv as string[]);
  }
}
