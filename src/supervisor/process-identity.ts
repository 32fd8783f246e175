import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * What tells a process apart from a later one that got the same pid: on Linux the boot id and the
 * process's start time in clock ticks since boot (/proc/<pid>/stat, field 22); elsewhere the start
 * time `ps` prints. null when no such process runs (or it is a zombie, which nothing can signal
 * usefully any more).
 */
export function processStartToken(pid: number): string | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (process.platform === 'linux') {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return null;
    }
    // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return null;
    const startTicks = fields[19];
    return startTicks ? `${bootId()}:${startTicks}` : null;
  }
  try {
    const out = execFileSync('ps', ['-o', 'stat=,lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (out === '' || out.startsWith('Z')) return null;
    return out.slice(out.indexOf(' ') + 1).trim();
  } catch {
    return null;
  }
}

let cachedBootId: string | undefined;
function bootId(): string {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      cachedBootId = 'unknown-boot';
    }
  }
  return cachedBootId;
}

/** The process `pid` runs and, when `token` is given, is the one that token was taken from. */
export function isSameProcess(pid: number, token: string | null | undefined): boolean {
  const now = processStartToken(pid);
  if (now === null) return false;
  return token === undefined || token === null || now === token;
}

/**
 * Whether any process of process group `pgid` still runs. Zombies do not count: a killed process
 * whose parent died is reaped by init, on some machines (a container's or a VM's init) a second or
 * more later, and it holds nothing meanwhile.
 */
export function groupRuns(pgid: number): boolean {
  if (process.platform !== 'linux') {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // After the command name: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

/** Signal process group `pid` (a child spawned `detached` leads its own), if it is still there. */
export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}
