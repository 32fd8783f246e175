/** Build a call payload from `--payload` JSON and `key=value` arguments (see `svc trigger --help`). */
export function buildPayload(
  payloadFlag: string | undefined,
  pairs: string[],
): { ok: true; payload: Record<string, unknown> } | { ok: false; message: string } {
  let payload: Record<string, unknown> = {};
  if (payloadFlag !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(payloadFlag);
    } catch (e) {
      return { ok: false, message: `--payload is not valid JSON: ${(e as Error).message}` };
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      const what = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
      return { ok: false, message: `--payload must be a JSON object like '{"a":1}', got ${what}` };
    }
    payload = parsed as Record<string, unknown>;
  }
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return { ok: false, message: `argument "${pair}" is not key=value (e.g. a=2)` };
    const key = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    payload[key] = typeValue(raw);
  }
  return { ok: true, payload };
}

export function typeValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
