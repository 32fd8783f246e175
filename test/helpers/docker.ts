import { execFileSync, spawnSync } from 'node:child_process';
import Docker from 'dockerode';

/**
 * Whether the Docker tests can run here. Outside CI they are skipped, with the reason printed,
 * when no Docker engine answers; in CI (CI=true) that is a failure: `scripts/test.sh` starts
 * dockerd, so a missing engine there is a broken setup, never a reason to pass quietly.
 */
export async function dockerSkipReason(needImages: string[] = []): Promise<string | undefined> {
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  let reason: string | undefined;
  try {
    await docker.ping();
    for (const img of needImages) {
      try {
        await docker.getImage(img).inspect();
      } catch {
        reason = `image ${img} is missing (scripts/test.sh builds it; see docs/docker.md)`;
        break;
      }
    }
  } catch (e) {
    reason = `no Docker engine answers at /var/run/docker.sock (${(e as Error).message}); start one with scripts/start-dockerd.sh`;
  }
  if (reason === undefined) return undefined;
  if (process.env.CI === 'true') throw new Error(`Docker tests cannot run in CI: ${reason}`);
  process.stdout.write(`# skipping Docker tests: ${reason}\n`);
  return reason;
}

/** `docker …` from the Debian package or wherever it is on PATH. */
export function dockerCli(args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `docker compose` (v2 plugin) where it exists, else Debian's `docker-compose` (v1). */
export function composeCommand(): string[] | undefined {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0) return ['docker-compose'];
  return undefined;
}
