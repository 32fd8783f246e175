/**
 * Reading the OTLP JSON that iii SDKs send (otlp-logs.ts, otlp-spans-in.ts): the request object and
 * `AnyValue`s and attribute lists as plain JSON. The text comes from an untrusted peer: nothing
 * here throws, and nesting is bounded.
 */

/** Nesting kept in an attribute value (kvlist, array); deeper parts become a marker. */
const MAX_ATTRIBUTE_DEPTH = 16;
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const arrayOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The request object of an OTLP JSON export, or undefined when the text is not one. */
export function otlpRequest(json: string): Record<string, unknown> | undefined {
  let req: unknown;
  try {
    req = JSON.parse(json);
  } catch {
    return undefined;
  }
  return isObject(req) ? req : undefined;
}

/** An OTLP `AnyValue` as plain JSON. */
export function anyValue(v: unknown, depth = 0): unknown {
  if (!isObject(v)) return null;
  if (depth > MAX_ATTRIBUTE_DEPTH) return '[nested too deep]';
  if ('stringValue' in v) return typeof v.stringValue === 'string' ? v.stringValue : null;
  if ('boolValue' in v) return v.boolValue === true;
  if ('intValue' in v) {
    const n = typeof v.intValue === 'string' ? Number(v.intValue) : v.intValue;
    return typeof n === 'number' && Number.isFinite(n) ? n : null;
  }
  if ('doubleValue' in v) return typeof v.doubleValue === 'number' ? v.doubleValue : null;
  if ('bytesValue' in v) return typeof v.bytesValue === 'string' ? v.bytesValue : null;
  if ('arrayValue' in v) return arrayOf(isObject(v.arrayValue) ? v.arrayValue.values : undefined).map((x) => anyValue(x, depth + 1));
  if ('kvlistValue' in v) return attributes(isObject(v.kvlistValue) ? v.kvlistValue.values : undefined, depth + 1);
  return null;
}

/** An OTLP attribute list `[{key, value}]` as an object. */
export function attributes(list: unknown, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of arrayOf(list)) {
    if (isObject(kv) && typeof kv.key === 'string' && kv.key !== '__proto__') out[kv.key] = anyValue(kv.value, depth);
  }
  return out;
}
