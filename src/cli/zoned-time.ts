/**
 * A moment as the wall-clock time of a named time zone, labelled with it. A cron schedule is read
 * in its own zone (docs/cron.md), so its fire times are shown there: a user who wrote
 * `timezone: Europe/Paris` reads `2026-11-26 02:30:00+01:00 Europe/Paris`, not the UTC instant.
 * The offset tells apart the two 02:30s of the night a zone turns its clocks back.
 */
export function inZone(iso: string, zone: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  let parts: Record<string, string>;
  try {
    const fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    });
    parts = Object.fromEntries(fmt.formatToParts(d).map((p) => [p.type, p.value]));
  } catch {
    return iso; // a zone this Node does not know: the instant itself is still right
  }
  // longOffset is `GMT+01:00`, or `GMT` at offset zero.
  const offset = zone === 'UTC' ? '' : (parts.timeZoneName ?? '').replace(/^GMT$/, '+00:00').replace(/^GMT/, '');
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}${offset} ${zone}`;
}
