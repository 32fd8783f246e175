import { ProcessRuntime } from '../../src/supervisor/process-runtime.js';
import { runtimeConformance } from './runtime-conformance.js';

runtimeConformance({
  name: 'process',
  make: () => new ProcessRuntime(),
  firstLaunchMs: 10_000,
  async killHard(inst) {
    process.kill(inst.pid!, 'SIGKILL');
  },
  async alive(inst) {
    try {
      process.kill(inst.pid!, 0);
      return true;
    } catch {
      return false;
    }
  },
});
