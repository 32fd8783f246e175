/**
 * `node dist/bench/decode.js`: what the nesting-depth check costs where every frame enters
 * (decodeFrame, issue 17). Frames of the shapes the engine sees, from the benchmark's 120-character
 * call to a 1 MB payload, decoded with the check (MAX_FRAME_DEPTH) and without it (a limit of
 * Infinity, which skips the scan as the code before the check did), in alternating batches in one
 * process; the median ns per frame of 9 rounds. Frames shorter than 2 × 128 characters skip the
 * scan, so the first row measures the check's length test alone.
 *
 *   node dist/bench/decode.js [--rounds 9]
 */
import { decodeFrame, MAX_FRAME_DEPTH } from 'svc-sdk/protocol';
import { fmt, machine, median, runMain, UsageError } from './harness.js';

const call = (data: unknown): string =>
  JSON.stringify({ type: 'invokefunction', function_id: 'bench::add', invocation_id: '2b5f0c1e-8d4a-4c7e-9f10-3a6b2d1e0f99', timeout_ms: 30000, data });

/** A record of the kind a worker passes around: keys, short strings, numbers, a nested object. */
const record = (i: number): unknown => ({ id: i, name: `user-${i}`, email: `user${i}@example.com`, tags: ['a', 'b'], address: { city: 'Berlin', zip: '10115' }, active: i % 2 === 0 });

const FRAMES: Array<[string, string]> = [
  ['bench call (~120 chars)', call({ a: 1, b: 2 })],
  ['small object (~400 chars)', call({ records: [record(1), record(2)] })],
  ['records, 4 KB', call({ records: Array.from({ length: 24 }, (_, i) => record(i)) })],
  ['records, 64 KB', call({ records: Array.from({ length: 400 }, (_, i) => record(i)) })],
  ['one string, 64 KB', call({ text: 'lorem ipsum '.repeat(5500) })],
  ['numbers, 64 KB', call({ xs: Array.from({ length: 9000 }, (_, i) => i * 1.5) })],
  ['records, 1 MB', call({ records: Array.from({ length: 6400 }, (_, i) => record(i)) })],
];

function parseArgs(argv: string[]): { rounds: number } {
  const o = { rounds: 9 };
  for (let i = 0; i < argv.length; i++) {
    const n = Number(argv[i + 1]);
    if (argv[i] === '--rounds' && Number.isInteger(n) && n > 0) {
      o.rounds = n;
      i++;
    } else throw new UsageError(`unknown or incomplete argument ${argv[i]} (known: --rounds N)`);
  }
  return o;
}

/** ns per decode of `text` over a batch of about 20 ms. */
function time(text: string, limit: number): number {
  const n = Math.max(20, Math.ceil(4_000_000 / text.length));
  let ok = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) if (decodeFrame(text, limit).ok) ok++;
  const ns = Number(process.hrtime.bigint() - t0) / n;
  if (ok !== n) throw new Error('a frame did not decode');
  return ns;
}

async function main(): Promise<void> {
  const { rounds } = parseArgs(process.argv.slice(2));
  process.stdout.write(`machine: ${machine()}\n\n| frame | chars | without the check, ns | with it, ns | cost of the check |\n|---|---:|---:|---:|---:|\n`);
  for (const [label, text] of FRAMES) {
    for (let w = 0; w < 3; w++) time(text, Infinity) + time(text, MAX_FRAME_DEPTH);
    const without: number[] = [];
    const withCheck: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternating, starting with either, so that drift of the machine falls on both.
      if (r % 2 === 0) {
        without.push(time(text, Infinity));
        withCheck.push(time(text, MAX_FRAME_DEPTH));
      } else {
        withCheck.push(time(text, MAX_FRAME_DEPTH));
        without.push(time(text, Infinity));
      }
    }
    const a = median(without);
    const b = median(withCheck);
    process.stdout.write(`| ${label} | ${fmt(text.length)} | ${fmt(a)} | ${fmt(b)} | ${b >= a ? '+' : ''}${fmt(((b - a) / a) * 100, 1)} % |\n`);
  }
}

runMain(main);
