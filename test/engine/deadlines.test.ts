import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Deadlines, type DeadlineEntry } from 'svc-sdk/internal';

type Entry = DeadlineEntry & { name: string; addedAt: number; expiredAt?: number };

function entry(name: string): Entry {
  return { name, addedAt: 0, deadlineAt: 0, lane: null, prevDue: null, nextDue: null };
}

describe('Deadlines (engine-side invocation timeouts)', () => {
  test('entries expire in deadline order, never before their duration, across lanes of different durations', async () => {
    const expired: Entry[] = [];
    const d = new Deadlines<Entry>((e) => {
      e.expiredAt = performance.now();
      expired.push(e);
    });
    const plan: Array<[string, number]> = [
      ['a60', 60],
      ['b20', 20],
      ['c60', 60],
      ['d40', 40],
      ['e20', 20],
    ];
    for (const [name, ms] of plan) {
      const e = entry(name);
      e.addedAt = performance.now();
      d.add(e, ms, e.addedAt);
      await sleep(2);
    }
    await sleep(120);
    assert.deepEqual(
      expired.map((e) => e.name),
      ['b20', 'e20', 'd40', 'a60', 'c60'],
    );
    for (const e of expired) {
      const ms = Number(e.name.slice(1));
      assert.ok(e.expiredAt! - e.addedAt >= ms, `${e.name} expired after ${(e.expiredAt! - e.addedAt).toFixed(2)} ms, before its ${ms} ms`);
    }
  });

  test('a removed entry never expires, wherever it sits in its lane, and the others still do', async () => {
    const expired: string[] = [];
    const d = new Deadlines<Entry>((e) => expired.push(e.name));
    const es = ['head', 'middle', 'tail', 'kept'].map(entry);
    for (const e of es) d.add(e, 30, performance.now());
    d.remove(es[0]!);
    d.remove(es[1]!);
    d.remove(es[2]!);
    d.remove(es[2]!); // twice is harmless
    await sleep(80);
    assert.deepEqual(expired, ['kept']);
  });

  test('entries added while a lane expires are timed from their own start', async () => {
    const expired: Array<[string, number]> = [];
    let started = 0;
    const d: Deadlines<Entry> = new Deadlines<Entry>((e) => {
      expired.push([e.name, performance.now()]);
      if (e.name === 'first') {
        started = performance.now();
        d.add(entry('second'), 30, started);
      }
    });
    d.add(entry('first'), 30, performance.now());
    await sleep(120);
    assert.deepEqual(
      expired.map(([n]) => n),
      ['first', 'second'],
    );
    assert.ok(expired[1]![1] - started >= 30, 'second expired early');
  });
});
