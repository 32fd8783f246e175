import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inZone } from '../../src/cli/zoned-time.js';

test('inZone: the wall-clock time of the zone with its offset and name; UTC plainly; bad input left as it was', () => {
  assert.equal(inZone('2026-11-26T01:30:00.000Z', 'Europe/Paris'), '2026-11-26 02:30:00+01:00 Europe/Paris');
  assert.equal(inZone('2026-07-01T00:30:00.000Z', 'Europe/Paris'), '2026-07-01 02:30:00+02:00 Europe/Paris');
  assert.equal(inZone('2026-11-26T01:30:00.000Z', 'UTC'), '2026-11-26 01:30:00 UTC');
  assert.equal(inZone('2026-11-26T23:30:00.000Z', 'Asia/Kolkata'), '2026-11-27 05:00:00+05:30 Asia/Kolkata');
  assert.equal(inZone('2026-11-26T01:30:00.000Z', 'America/New_York'), '2026-11-25 20:30:00-05:00 America/New_York');
  // Europe/London in winter is at offset zero, but it is not UTC: its offset is written out.
  assert.equal(inZone('2026-11-26T01:30:00.000Z', 'Europe/London'), '2026-11-26 01:30:00+00:00 Europe/London');
  // The night Paris turns its clocks back, 02:30 comes twice: the offset tells which.
  assert.equal(inZone('2026-10-25T00:30:00.000Z', 'Europe/Paris'), '2026-10-25 02:30:00+02:00 Europe/Paris');
  assert.equal(inZone('2026-10-25T01:30:00.000Z', 'Europe/Paris'), '2026-10-25 02:30:00+01:00 Europe/Paris');
  assert.equal(inZone('not a time', 'UTC'), 'not a time');
  assert.equal(inZone('2026-11-26T01:30:00.000Z', 'Mars/Olympus'), '2026-11-26T01:30:00.000Z');
});
