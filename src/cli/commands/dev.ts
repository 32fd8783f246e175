import { Flags } from '@oclif/core';
import Start from './start.js';

export default class Dev extends Start {
  static override summary = 'Start the engine for development: workers restart when their sources change (`svc --config config.yaml --watch`).';
  static override description = `The engine of config.yaml, as \`svc --config\` starts it, and while it runs:
- a local worker (one with path:) is restarted when a file in its directory changes (debounced; node_modules, .venv,
  __pycache__, .git, dist and data are not watched); its dependencies are reinstalled only when package.json,
  package-lock.json, requirements.txt or pyproject.toml changed;
- edits of config.yaml's workers: are applied without restarting the engine: added entries start, removed ones stop,
  changed ones restart. A config.yaml the engine would refuse is reported and changes nothing.
Ctrl-C stops the engine and its workers.`;
  static override examples = ['svc dev', 'svc dev --config config.yaml --port 0'];
  static override flags = { ...Start.flags, watch: Flags.boolean({ summary: 'Always on for svc dev.', default: true, hidden: true }) };
}
