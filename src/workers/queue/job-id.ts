/**
 * Job ids: UUIDs in version 7's layout (48 bits of Unix milliseconds first, then random bits), so
 * ids sort by creation time. The embedded store keys jobs by id: time-ordered ids make its inserts
 * append to the right edge of LMDB's B-tree instead of landing on random pages, so the pages a
 * busy queue touches (and keeps mapped, in svc-queue's RSS) stay few however many jobs wait
 * (bench/RESULTS.md, queue memory).
 */
import { randomFillSync } from 'node:crypto';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** Random bytes drawn in blocks: one call to the system's generator per 256 ids. */
const pool = Buffer.alloc(10 * 256);
let at = pool.length;

export function jobId(now = Date.now()): string {
  if (at + 10 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  const r = pool;
  const i = at;
  at += 10;
  const ms = now.toString(16).padStart(12, '0').slice(-12);
  return (
    ms.slice(0, 8) +
    '-' +
    ms.slice(8) +
    '-7' +
    HEX[r[i]!]!.slice(1) +
    HEX[r[i + 1]!] +
    '-' +
    HEX[(r[i + 2]! & 0x3f) | 0x80] +
    HEX[r[i + 3]!] +
    '-' +
    HEX[r[i + 4]!] +
    HEX[r[i + 5]!] +
    HEX[r[i + 6]!] +
    HEX[r[i + 7]!] +
    HEX[r[i + 8]!] +
    HEX[r[i + 9]!]
  );
}
