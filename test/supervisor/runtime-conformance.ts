/**
 * What every Runtime (process, docker) must do, as one suite run against each implementation
 * (process-runtime.test.ts, docker-runtime.test.ts). The worker under test is a small Python
 * program (fixture below) driven through environment variables, so both runtimes run the very
 * same directory: the docker runtime builds its image, the process runtime runs it in place.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadManifest } from '../../src/supervisor/manifest.js';
import type { Instance, LaunchSpec, Runtime } from '../../src/supervisor/runtime.js';
import { eventually } from '../helpers/util.js';

const WORKER_PY = `
import os, signal, sys, threading, time
if os.environ.get("WATCH_STDIN") == "1" and os.environ.get("SVC_LIVENESS_FD") == "0":
    def watch():
        while os.read(0, 4096):
            pass
        print("liveness eof", flush=True)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()
if os.environ.get("IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
else:
    signal.signal(signal.SIGTERM, lambda *_: (print("got SIGTERM", flush=True), sys.exit(0)))
# Printed once the handlers are in place: tests wait for it before signalling.
print(f"hello url={os.environ.get('SVC_URL')} name={os.environ.get('SVC_WORKER_NAME')} greeting={os.environ.get('GREETING')} leak={os.environ.get('SVC_TEST_HOST_ONLY', 'none')}", flush=True)
print("to stderr", file=sys.stderr, flush=True)
if os.environ.get("EXIT_CODE"):
    sys.exit(int(os.environ["EXIT_CODE"]))
while True:
    time.sleep(0.05)
`;

/** A worker directory (svc.worker.yaml + main.py) in a fresh temporary project. */
export function makeFixtureProject(): { dir: string; workerDir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-rt-'));
  const workerDir = join(dir, 'workers', 'probe');
  mkdirSync(workerDir, { recursive: true });
  writeFileSync(join(workerDir, 'main.py'), WORKER_PY);
  writeFileSync(join(workerDir, 'requirements.txt'), '# nothing: the probe needs only the standard library\n');
  writeFileSync(
    join(workerDir, 'svc.worker.yaml'),
    'name: probe\nruntime:\n  kind: python\n  package_manager: pip\n  entry: main.py\nscripts:\n  install: pip install -r requirements.txt\n  start: python3 main.py\n',
  );
  return { dir, workerDir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface ConformanceTarget {
  name: string;
  make(): Runtime;
  /** Kill an instance from outside, as an OOM killer or `docker kill` would. */
  killHard(inst: Instance): Promise<void>;
  /** Whether instance `inst` is still alive, asked of the host (not of the runtime). */
  alive(inst: Instance): Promise<boolean>;
  /** First launch may build an image: allow that long. */
  firstLaunchMs: number;
}

export function runtimeConformance(t: ConformanceTarget): void {
  describe(`Runtime conformance: ${t.name}`, () => {
    let fx: ReturnType<typeof makeFixtureProject>;
    let rt: Runtime;
    const live: Instance[] = [];

    const spec = (over: Partial<LaunchSpec> & { extraEnv?: Record<string, string> } = {}): LaunchSpec => {
      const own = { SVC_URL: 'ws://127.0.0.1:1', SVC_WORKER_NAME: 'probe', GREETING: 'hi', ...over.extraEnv };
      const { extraEnv: _, ...rest } = over;
      return {
        name: 'probe',
        replica: 0,
        cwd: fx.workerDir,
        command: 'python3 main.py',
        env: { ...(process.env as Record<string, string>), SVC_TEST_HOST_ONLY: 'leaked', ...own },
        containerEnv: own,
        logFile: join(fx.dir, '.svc', 'logs', 'probe.log'),
        manifest: loadManifest(fx.workerDir),
        ...rest,
      };
    };
    const log = (s: LaunchSpec): string => {
      try {
        return readFileSync(s.logFile, 'utf8');
      } catch {
        return '';
      }
    };
    const count = (s: LaunchSpec, what: string): number => log(s).split(what).length - 1;
    /** Launch, and wait until the worker says it is ready (its signal handlers are in place). */
    const launch = async (s: LaunchSpec, ready = true): Promise<Instance> => {
      const hellos = count(s, 'hello url=');
      const i = await rt.launch(s);
      live.push(i);
      if (ready) await eventually(() => assert.ok(count(s, 'hello url=') > hellos, 'worker did not start'), 20_000);
      return i;
    };

    before(async () => {
      fx = makeFixtureProject();
      rt = t.make();
      // Warm-up launch (the docker runtime builds the image here), then stop it.
      const s = spec();
      const i = await rt.launch(s);
      await eventually(() => assert.match(log(s), /hello url=/), t.firstLaunchMs);
      await i.stop(2000);
    });
    after(async () => {
      await Promise.all(live.map((i) => i.stop(1000).catch(() => undefined)));
      fx.cleanup();
    });

    it('runs the worker with the svc environment, its output appended to the log file', async () => {
      const s = spec({ extraEnv: { GREETING: 'conformance' } });
      const i = await launch(s);
      assert.ok(i.id.length > 0);
      assert.match(log(s), /hello url=ws:\/\/127\.0\.0\.1:1 name=probe greeting=conformance/);
      await eventually(() => assert.match(log(s), /to stderr/), 5000);
      // Each line of stdout and stderr stamped with the time and the replica (log-stamp.ts).
      assert.match(log(s), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[0\] hello url=ws:\/\/127\.0\.0\.1:1 name=probe greeting=conformance /m);
      assert.match(log(s), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[0\] .*to stderr/m);
      assert.ok(await t.alive(i), 'instance should be alive');
      await i.stop(2000);
    });

    it('stop() sends SIGTERM, waits for the exit, and the instance is gone', async () => {
      const s = spec();
      const i = await launch(s);
      const before = count(s, 'got SIGTERM');
      await i.stop(5000);
      const info = await i.exited;
      assert.equal(info.code, 0, `clean exit expected, got ${JSON.stringify(info)}`);
      await eventually(() => assert.equal(count(s, 'got SIGTERM'), before + 1), 3000);
      assert.equal(await t.alive(i), false);
    });

    it('stop() forces an instance that ignores SIGTERM after the grace period', async () => {
      const s = spec({ extraEnv: { IGNORE_TERM: '1' } });
      const i = await launch(s);
      const t0 = Date.now();
      await i.stop(1000);
      const took = Date.now() - t0;
      assert.ok(took >= 900, `stopped after ${took} ms, before the 1 s grace`);
      assert.ok(took < 15_000, `stopped after ${took} ms`);
      assert.equal(await t.alive(i), false);
    });

    it('reports the exit code of an instance that exits on its own', async () => {
      const i = await launch(spec({ extraEnv: { EXIT_CODE: '3' } }), false);
      const info = await i.exited;
      assert.equal(info.code, 3);
      assert.equal(info.signal, null);
    });

    it('reports a kill from outside as SIGKILL', async () => {
      const s = spec();
      const i = await launch(s);
      await t.killHard(i);
      const info = await i.exited;
      assert.ok(info.signal === 'SIGKILL' || info.code === 137, `expected SIGKILL, got ${JSON.stringify(info)}`);
      assert.equal(await t.alive(i), false);
    });

    it('runs replicas side by side as distinct instances', async () => {
      const a = await launch(spec({ replica: 0 }));
      const b = await launch(spec({ replica: 1 }));
      assert.notEqual(a.id, b.id);
      // Each replica's lines tagged with its index.
      await eventually(() => assert.match(log(spec()), /^\S+Z \[1\] hello url=/m), 5000);
      assert.ok(await t.alive(a));
      assert.ok(await t.alive(b));
      await Promise.all([a.stop(2000), b.stop(2000)]);
      assert.equal(await t.alive(a), false);
      assert.equal(await t.alive(b), false);
    });
  });
}
