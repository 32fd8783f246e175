import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { ensureWorkerImage } from '../../src/supervisor/docker-image.js';
import { assertDockerReachable, DockerRuntime, DockerUnavailableError, projectLabel } from '../../src/supervisor/docker-runtime.js';
import { loadManifest } from '../../src/supervisor/manifest.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { parseWorkerEntries } from '../../src/supervisor/worker-entries.js';
import { dockerSkipReason } from '../helpers/docker.js';
import { standInEngine } from '../helpers/stand-in-engine.js';
import { eventually, sleep } from '../helpers/util.js';
import { makeFixtureProject, runtimeConformance } from './runtime-conformance.js';

const docker = new Docker({ socketPath: '/var/run/docker.sock' });
const skip = await dockerSkipReason();

describe('docker runtime without a Docker engine', () => {
  it('says Docker is not reachable and how to use the process runtime instead', async () => {
    const nowhere = new Docker({ socketPath: '/nonexistent/docker.sock' });
    await assert.rejects(assertDockerReachable(nowhere, '/nonexistent/docker.sock'), (e: unknown) => {
      assert.ok(e instanceof DockerUnavailableError);
      assert.equal(e.code, 'docker_unavailable');
      assert.match(e.message, /^Docker is not reachable at \/nonexistent\/docker\.sock: .*ENOENT/);
      assert.match(e.message, /use the process runtime: svc worker add <dir> \(without --runtime docker\)/);
      return true;
    });
  });
});

if (!skip) {
  const state = async (id: string): Promise<{ Running: boolean } | null> => {
    try {
      return (await docker.getContainer(id).inspect()).State;
    } catch {
      return null;
    }
  };
  const configFile = '/tmp/svc-docker-conformance/config.yaml';
  runtimeConformance({
    name: 'docker',
    make: () => new DockerRuntime({ configFile }),
    firstLaunchMs: 300_000,
    async killHard(inst) {
      await docker.getContainer(inst.id).kill();
    },
    async alive(inst) {
      return (await state(inst.id))?.Running === true;
    },
  });

  describe('docker runtime specifics', () => {
    let fx: ReturnType<typeof makeFixtureProject>;
    let rt: DockerRuntime;
    before(() => {
      fx = makeFixtureProject();
      rt = new DockerRuntime({ configFile: join(fx.dir, 'config.yaml') });
    });
    after(() => fx.cleanup());

    const spec = (replica: number) => {
      const own = { SVC_URL: 'ws://127.0.0.1:1', SVC_WORKER_NAME: 'probe', GREETING: 'labels' };
      return {
        name: 'probe',
        replica,
        cwd: fx.workerDir,
        command: 'python3 main.py',
        env: { ...(process.env as Record<string, string>), SVC_TEST_HOST_ONLY: 'leaked', ...own },
        containerEnv: own,
        logFile: join(fx.dir, '.svc', 'logs', 'probe.log'),
        manifest: loadManifest(fx.workerDir),
      };
    };

    it('builds an image once per worker context, and again only when the context changes', async () => {
      const m = loadManifest(fx.workerDir);
      const first = await ensureWorkerImage(docker, m);
      const again = await ensureWorkerImage(docker, m);
      assert.equal(again.status, 'cached');
      assert.equal(again.tag, first.tag);
      assert.match(first.tag, /^svc-worker-probe:[0-9a-f]{16}$/);
      // Unique per run: images of earlier runs stay in the local store and must not match.
      const edited = readFileSync(join(fx.workerDir, 'main.py'), 'utf8') + `\n# changed ${process.pid}-${Date.now()}\n`;
      writeFileSync(join(fx.workerDir, 'main.py'), edited);
      const changed = await ensureWorkerImage(docker, loadManifest(fx.workerDir));
      assert.notEqual(changed.tag, first.tag);
      assert.equal(changed.status, 'built');
    });

    it('an image whose content exists under another name is tagged from it, not built again', async () => {
      // svc build with another registry prefix, or after the docker runtime built svc-worker-<name>:
      // before, the same context was built again (minutes for a real worker).
      const m = loadManifest(fx.workerDir);
      const own = await ensureWorkerImage(docker, m);
      const hash = own.tag.slice(own.tag.indexOf(':') + 1);
      const repository = `svc-test-${process.pid}-${Date.now()}/probe`;
      const lines: string[] = [];
      try {
        const other = await ensureWorkerImage(docker, m, { repository, onLine: (l) => lines.push(l) });
        assert.equal(other.status, 'tagged');
        assert.equal(other.tag, `${repository}:${hash}`);
        assert.match(other.from ?? '', new RegExp(`:${hash}$`));
        assert.deepEqual(lines, [], 'nothing was built');
        assert.equal((await docker.getImage(other.tag).inspect()).Id, (await docker.getImage(own.tag).inspect()).Id);
        assert.equal((await ensureWorkerImage(docker, m, { repository })).status, 'cached');
      } finally {
        await docker.getImage(`${repository}:${hash}`).remove().catch(() => undefined);
      }
    });

    it('labels containers, runs them on the host network with only svc variables, removes them on stop', async () => {
      const s = spec(1);
      const inst = await rt.launch(s);
      try {
        const info = await docker.getContainer(inst.id).inspect();
        assert.equal(info.Config.Labels['svc.worker'], 'probe');
        assert.equal(info.Config.Labels['svc.replica'], '1');
        assert.equal(info.Config.Labels['svc.project'], projectLabel(join(fx.dir, 'config.yaml')));
        assert.equal(info.HostConfig.NetworkMode, 'host');
        assert.equal(info.HostConfig.RestartPolicy?.Name, 'no');
        assert.ok(info.Config.Env.includes('SVC_URL=ws://127.0.0.1:1'));
        await eventually(() => assert.match(readFileSync(s.logFile, 'utf8'), /greeting=labels leak=none/), 20_000);
      } finally {
        await inst.stop(2000);
      }
      await assert.rejects(docker.getContainer(inst.id).inspect(), /no such container/i);
    });

    it('the container\'s stdin is the liveness pipe: SIGKILL of the engine process ends a worker that watches it', async () => {
      // A stand-in engine process holding the runtime, killed as kill -9 kills an engine.
      const runtime = fileURLToPath(new URL('../../src/supervisor/docker-runtime.js', import.meta.url));
      const s = { ...spec(2), containerEnv: { ...spec(2).containerEnv, WATCH_STDIN: '1' }, manifest: undefined };
      const { engine, match } = await standInEngine(
        `import { DockerRuntime } from ${JSON.stringify(runtime)};
        import { loadManifest } from ${JSON.stringify(runtime.replace('docker-runtime.js', 'manifest.js'))};
        const s = ${JSON.stringify(s)};
        const inst = await new DockerRuntime({ configFile: ${JSON.stringify(join(fx.dir, 'config.yaml'))} }).launch({ ...s, manifest: loadManifest(${JSON.stringify(fx.workerDir)}) });
        console.log('container', inst.id);`,
        /container ([0-9a-f]+)/,
      );
      const id = match[1]!;
      try {
        await eventually(async () => assert.match((await docker.getContainer(id).logs({ stdout: true })).toString(), /hello url=/), 20_000);
        assert.equal((await state(id))?.Running, true);
        engine.kill('SIGKILL');
        await eventually(async () => assert.equal((await state(id))?.Running, false, 'the container outlived its engine'), 10_000);
        assert.match((await docker.getContainer(id).logs({ stdout: true })).toString(), /liveness eof/);
      } finally {
        engine.kill('SIGKILL');
        await docker.getContainer(id).remove({ force: true }).catch(() => undefined);
      }
    });

    it('a stop while the image builds ends the build within the stop grace, leaving no process or container of it', { timeout: 120_000 }, async () => {
      // `svc worker remove`, `restart` or the engine's Ctrl-C while a worker's image builds (its
      // install step can take minutes). Before, the stop waited for the build to end.
      const slow = makeFixtureProject();
      // A sleep no other process runs (the pid in it), found on the host as the build's RUN step.
      const sleeper = `sleep 45.${process.pid}`;
      writeFileSync(join(slow.workerDir, 'slow-install.sh'), `echo "slow install running"\n${sleeper}\n`);
      const yaml = join(slow.workerDir, 'svc.worker.yaml');
      writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('install: pip install -r requirements.txt', 'install: sh slow-install.sh'));
      const cfg = join(slow.dir, 'config.yaml');
      writeFileSync(cfg, 'workers: []\n');
      const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', stopGraceMs: 2000, runtimes: { docker: new DockerRuntime({ configFile: cfg }) } });
      const [entry] = parseWorkerEntries(cfg, [{ name: 'probe', path: slow.workerDir, runtime: 'docker' }]);
      const log = join(slow.dir, '.svc', 'logs', 'probe.log');
      const sleeping = (): boolean => {
        try {
          return execFileSync('pgrep', ['-f', `^${sleeper.replace('.', '\\.')}$`], { encoding: 'utf8' }).trim() !== '';
        } catch {
          return false;
        }
      };
      const stepContainers = (): string[] => [...readFileSync(log, 'utf8').matchAll(/---> Running in ([0-9a-f]+)/g)].map((m) => m[1]!);
      try {
        const started = s.start(entry!, { force: true });
        await eventually(() => assert.ok(existsSync(log) && /slow install running/.test(readFileSync(log, 'utf8')) && sleeping(), 'building'), 60_000);
        const t0 = Date.now();
        const stopped = await Promise.race([s.stop('probe').then(() => 'stopped'), sleep(15_000).then(() => 'still waiting')]);
        const took = Date.now() - t0;
        assert.equal(stopped, 'stopped', 'the stop waited for the build');
        assert.ok(took < 2000 + 3000, `the stop took ${took} ms (grace 2000 ms)`);
        assert.equal(sleeping(), false, 'the install step outlived the stop');
        assert.ok(stepContainers().length > 0);
        for (const id of stepContainers()) assert.equal(await state(id), null, `the build's container ${id} outlived the stop`);
        const left = await docker.listContainers({ all: true, filters: { label: [`svc.project=${projectLabel(cfg)}`] } });
        assert.deepEqual(left, []);
        await started;
        assert.equal(s.get('probe')!.status, 'stopped');
      } finally {
        await s.stopAll();
        slow.cleanup();
      }
    });

    it('a build joined by a second caller and cancelled by the first is built for the second', { timeout: 120_000 }, async () => {
      // Replicas, or two entries of one directory, share one build (ensureWorkerImage): one
      // caller's stop must not fail the other's start.
      const shared = makeFixtureProject();
      writeFileSync(join(shared.workerDir, 'slow-install.sh'), `echo "slow install running"\nsleep 2 # ${process.pid}-${Date.now()}\n`);
      const yaml = join(shared.workerDir, 'svc.worker.yaml');
      writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('install: pip install -r requirements.txt', 'install: sh slow-install.sh'));
      const m = loadManifest(shared.workerDir);
      const cancel = new AbortController();
      let second: Promise<Awaited<ReturnType<typeof ensureWorkerImage>>> | undefined;
      let tag: string | undefined;
      try {
        const first = ensureWorkerImage(docker, m, {
          signal: cancel.signal,
          onLine: (l) => {
            // Started once the first build is under way (registered as in flight), so it joins it.
            if (l.startsWith('building image')) second = ensureWorkerImage(docker, m);
            if (/slow install running/.test(l)) cancel.abort(new Error('stopped on purpose'));
          },
        });
        await assert.rejects(first, /stopped on purpose/);
        assert.ok(second);
        const built = await second;
        tag = built.tag;
        assert.equal(built.status, 'built');
        assert.ok(await docker.getImage(built.tag).inspect());
      } finally {
        if (tag) await docker.getImage(tag).remove().catch(() => undefined);
        shared.cleanup();
      }
    });

    it('removeStale() removes containers an earlier engine of the same project left behind', async () => {
      const inst = await rt.launch(spec(0));
      // Another project's container is not touched.
      const other = new DockerRuntime({ configFile: join(fx.dir, 'elsewhere', 'config.yaml') });
      const foreign = await other.launch({ ...spec(0) });
      try {
        assert.equal(await rt.removeStale(), 1);
        await inst.exited;
        assert.ok((await docker.getContainer(foreign.id).inspect()).State.Running);
      } finally {
        await foreign.stop(1000);
      }
    });
  });
}
