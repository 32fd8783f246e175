import { Engine } from '../../src/engine/server.js';
import type { EngineOptions } from '../../src/engine/options.js';

/** A real engine on 127.0.0.1 and a free port, in this process. */
export async function startEngine(opts: Partial<EngineOptions> = {}): Promise<{ url: string; port: number; engine: Engine; stop(): Promise<void> }> {
  const engine = new Engine({ host: '127.0.0.1', port: 0, printEvents: false, shutdownGraceMs: 500, ...opts });
  const a = await engine.start();
  return { url: a.url, port: a.port, engine, stop: () => engine.stop() };
}
