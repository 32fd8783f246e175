export function duration(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '-';
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A byte count as KiB/MiB/GiB. */
export function bytes(n: number | undefined | null): string {
  if (n === undefined || n === null || !Number.isFinite(n)) return '-';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function uptime(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** A moment to the millisecond (local time), with the date unless it is today: an engine up for days keeps lines and traces of other days. */
export function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = d.toLocaleTimeString(undefined, { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  return d.toDateString() === new Date().toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

export function json(v: unknown, indent = 2): string {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v, null, indent);
  } catch {
    return String(v);
  }
}

/** Parse a JSON text box; an empty box is `{}`. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    return { ok: false, message: `Not valid JSON: ${(e as Error).message}` };
  }
}

/** A moment near now: the clock time today, the date and time otherwise (local time). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '-';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = d.toLocaleTimeString(undefined, { hour12: false });
  return d.toDateString() === new Date().toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

/**
 * A moment as the wall-clock time of `zone`, named: a cron schedule is read in its own zone, so its
 * fire times are shown there (`02:30:00+01:00 Europe/Paris`; the date too unless it is today
 * there). The offset tells apart the two 02:30s of a night the zone turns its clocks back.
 */
export function whenIn(iso: string | null | undefined, zone: string): string {
  if (!iso) return '-';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  let fmt: Intl.DateTimeFormat;
  try {
    fmt = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'longOffset' });
  } catch {
    return `${when(iso)} (local time)`; // a zone this browser does not know
  }
  const parts = (t: Date): Record<string, string> => Object.fromEntries(fmt.formatToParts(t).map((p) => [p.type, p.value]));
  const p = parts(d);
  const today = parts(new Date());
  const date = `${p.year}-${p.month}-${p.day}`;
  const offset = zone === 'UTC' ? '' : (p.timeZoneName ?? '').replace(/^GMT$/, '+00:00').replace(/^GMT/, '');
  const time = `${p.hour}:${p.minute}:${p.second}${offset} ${zone}`;
  return date === `${today.year}-${today.month}-${today.day}` ? time : `${date} ${time}`;
}

/** How a State value box's text is stored: JSON when it is JSON, else the text as a string. */
export type StateValueText = { ok: true; value: unknown; asText: boolean } | { ok: false; message: string };

/**
 * A State value as typed: JSON when the text is JSON (`42`, `true`, `null`, `{"a": 1}`, `"42"`),
 * else the text itself as a string (`hello`, `Alice Smith`), so a string needs no quotes. Text that
 * starts like JSON's object, array or string (`{`, `[`, `"`) but does not parse is refused rather
 * than stored as a string: it is a typo in JSON. An empty box is `null`.
 */
export function parseStateValue(text: string): StateValueText {
  const t = text.trim();
  if (t === '') return { ok: true, value: null, asText: false };
  try {
    return { ok: true, value: JSON.parse(t), asText: false };
  } catch (e) {
    if (/^[[{"]/.test(t)) return { ok: false, message: `Not valid JSON: ${(e as Error).message}` };
    return { ok: true, value: t, asText: true };
  }
}

/** The text an edit of `value` starts from: a string as itself when it reads back as that string, else JSON. */
export function stateValueDraft(value: unknown): string {
  if (typeof value === 'string') {
    const p = parseStateValue(value);
    if (p.ok && p.asText && p.value === value) return value;
  }
  return json(value);
}

/** What a State value box will store, in a few words: `number`, `object`, `string (not JSON: stored as text)`. */
export function stateValueHint(text: string): string {
  const p = parseStateValue(text);
  if (!p.ok) return p.message;
  if (p.asText) return 'saved as the string ' + JSON.stringify(p.value) + ' (not JSON)';
  const v = p.value;
  const kind = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
  return `saved as JSON: ${kind}`;
}
