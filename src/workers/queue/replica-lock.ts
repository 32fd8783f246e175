/**
 * One svc-queue per embedded data directory. The embedded store's dispatcher keeps no shared
 * claim state outside its process (a second process would not learn of new jobs, and leases of a
 * live process would look expired to it), so a second process on the same directory is refused
 * with `store_locked` instead of running beside the first. Several replicas need the Redis store.
 *
 * The lock is a file holding the owner's pid and host name. A file left by a process that died
 * (kill -9) names a pid that no longer runs on this host: it is taken over. A file naming another
 * host cannot be checked and is taken over too (a data directory is not shared across machines).
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { QueueError } from './store.js';

export interface ReplicaLock {
  release(): void;
}

const LOCK_FILE = 'svc-queue.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function acquireReplicaLock(dataDir: string): ReplicaLock {
  const file = join(dataDir, LOCK_FILE);
  const me = { pid: process.pid, host: hostname() };
  for (let tries = 0; tries < 3; tries++) {
    try {
      writeFileSync(file, JSON.stringify(me), { flag: 'wx' });
      let released = false;
      return {
        release: () => {
          if (released) return;
          released = true;
          try {
            const held = JSON.parse(readFileSync(file, 'utf8')) as { pid?: number };
            if (held.pid === me.pid) unlinkSync(file);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new QueueError('store_unavailable', `embedded queue store: cannot create ${file}: ${(e as Error).message}`);
      }
    }
    let holder: { pid?: unknown; host?: unknown } = {};
    try {
      holder = JSON.parse(readFileSync(file, 'utf8')) as typeof holder;
    } catch {
      /* unreadable or half-written: treated as stale */
    }
    if (typeof holder.pid === 'number' && holder.host === me.host && holder.pid !== me.pid && alive(holder.pid)) {
      throw new QueueError(
        'store_locked',
        `embedded queue store ${JSON.stringify(dataDir)} is in use by svc-queue pid ${holder.pid}: the embedded store serves one svc-queue per data_dir; use store: redis for several replicas, or another data_dir`,
      );
    }
    try {
      unlinkSync(file);
    } catch {
      /* someone else removed it first: try again */
    }
  }
  throw new QueueError('store_locked', `embedded queue store ${JSON.stringify(dataDir)}: could not take ${LOCK_FILE}`);
}
