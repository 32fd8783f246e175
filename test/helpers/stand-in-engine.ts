import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A stand-in for the engine process: runs `program` (an ES module, given as text) in a child node,
 * which holds a runtime, launches an instance and prints a line matching `ready`. Killing the child
 * with SIGKILL is what kill -9 or a crash does to an engine. Resolves with the child and the match.
 */
export async function standInEngine(program: string, ready: RegExp): Promise<{ engine: ChildProcess; match: RegExpExecArray }> {
  const engine = spawn(process.execPath, ['--input-type=module', '-e', `${program}\nsetInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    let out = '';
    engine.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) resolve(m);
    });
    engine.on('exit', () => reject(new Error(`the stand-in engine exited: ${out}`)));
  });
  return { engine, match };
}
