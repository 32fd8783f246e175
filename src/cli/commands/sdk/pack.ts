import { Command } from '@oclif/core';
import { fail } from '../../client.js';
import { svcRoot } from '../../scaffold.js';
import { cacheDir, sdkPackage, SdkPackageError } from '../../sdk-packages.js';

export default class SdkPack extends Command {
  static override summary = "Build this svc's SDK packages (npm tarball, Python wheel), or find them in the cache, and print their paths.";
  static override description = `The packages svc create and svc sdk update vendor into workers: npm pack of sdk/typescript and pip wheel
of sdk/python, with their metadata, README and LICENSE, as a registry would serve them (npm publish
<tarball>, twine upload <wheel> publish them unchanged). Built once per SDK content and kept in
${'$'}SVC_CACHE_DIR, ${'$'}XDG_CACHE_HOME/svc or ~/.cache/svc. Exit 2 when one cannot be built.`;
  static override examples = ['svc sdk pack'];

  async run(): Promise<void> {
    await this.parse(SdkPack);
    try {
      for (const language of ['typescript', 'python'] as const) this.log(sdkPackage(language, svcRoot()).path);
    } catch (e) {
      if (e instanceof SdkPackageError) fail(`${e.code}: ${e.message} (cache: ${cacheDir()})`, 2);
      throw e;
    }
  }
}
