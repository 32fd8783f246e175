/** When the stores' group commit (src/workers/shared/batcher.ts) hands writes over, and in which groups. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { TurnBatcher } from '../../../src/workers/shared/batcher.js';

function recorder(): { batcher: TurnBatcher<string>; batches: string[][] } {
  const batches: string[][] = [];
  return { batcher: new TurnBatcher<string>((b) => batches.push(b)), batches };
}

test('the writes of one turn leave together, at the end of that turn, in order', async () => {
  const { batcher, batches } = recorder();
  batcher.push('a');
  batcher.push('b');
  batcher.push('c');
  assert.deepEqual(batches, [], 'nothing leaves before the turn ends');
  await nextTurn();
  assert.deepEqual(batches, [['a', 'b', 'c']]);
  batcher.push('d');
  await nextTurn();
  assert.deepEqual(batches, [['a', 'b', 'c'], ['d']], 'a lone write when idle does not wait');
});

/** Let queued microtasks run without giving the event loop (and so the 1 ms timer) a turn. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

test('while busy, a lone write waits for the next writes and leaves with them', async () => {
  const { batcher, batches } = recorder();
  for (const x of ['1', '2', '3', '4']) batcher.push(x);
  await nextTurn();
  batcher.push('lone');
  await microtasks();
  assert.deepEqual(batches, [['1', '2', '3', '4']], 'the lone write waits');
  batcher.push('next');
  batcher.push('after');
  await microtasks();
  assert.deepEqual(batches, [['1', '2', '3', '4'], ['lone', 'next', 'after']]);
});

test('while busy, a small piece of a burst (up to a quarter of the last batch) waits too; a bigger one does not', async () => {
  const { batcher, batches } = recorder();
  const burst = Array.from({ length: 12 }, (_, i) => `b${i}`);
  for (const x of burst) batcher.push(x);
  await nextTurn();
  batcher.push('p1');
  batcher.push('p2');
  batcher.push('p3');
  await microtasks();
  assert.deepEqual(batches, [burst], 'three writes after a batch of twelve wait');
  batcher.push('rest');
  await microtasks();
  assert.deepEqual(batches, [burst, ['p1', 'p2', 'p3', 'rest']], 'they leave with the next turn that brings writes');
  for (const x of ['x1', 'x2']) batcher.push(x);
  await microtasks();
  assert.deepEqual(batches.at(-1), ['x1', 'x2'], 'two writes after a batch of four are half of it: no wait');
});

test('a waiting lone write leaves on its own when nothing follows', async () => {
  const { batcher, batches } = recorder();
  for (const x of ['1', '2', '3', '4']) batcher.push(x);
  await nextTurn();
  batcher.push('lone');
  await sleep(30);
  assert.deepEqual(batches, [['1', '2', '3', '4'], ['lone']]);
  // The last batch had one write: the next lone write does not wait.
  batcher.push('idle');
  await nextTurn();
  assert.deepEqual(batches.at(-1), ['idle']);
});

test('flush() hands over everything queued at once (a read, close), waiting or not', async () => {
  const { batcher, batches } = recorder();
  batcher.push('a');
  batcher.flush();
  assert.deepEqual(batches, [['a']]);
  for (const x of ['1', '2', '3', '4']) batcher.push(x);
  await nextTurn();
  batcher.push('lone');
  await nextTurn();
  batcher.flush();
  assert.deepEqual(batches, [['a'], ['1', '2', '3', '4'], ['lone']]);
  await sleep(30);
  assert.equal(batches.length, 3, 'nothing is handed over twice');
});
