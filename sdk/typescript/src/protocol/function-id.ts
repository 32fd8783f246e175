/**
 * What a function id may hold, checked by the engine when a function is registered and by the SDK
 * before it sends one (the Python SDK has the same rule). Ids are free-form (`math::add`,
 * `http::users/get`, `日本::検索`) but must be printable and unambiguous: an id with a control
 * character, whitespace, an invisible formatting character (a zero-width space, a bidirectional
 * override) or an unpaired surrogate could print like another id (`state::get` with a zero-width
 * space in it) or drive the terminal that shows it.
 */

export const FUNCTION_ID_MAX_LENGTH = 256;

/** Controls (C0, DEL, C1), format characters, whitespace of every script, unpaired surrogates. */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Z}\s]/u;
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const ZERO_WIDTH = /[\u200b-\u200d\u2060\ufeff]/;

function kindOf(c: string): string {
  if (/\p{Cc}/u.test(c)) return 'a control character';
  if (BIDI.test(c)) return 'a bidirectional control';
  if (ZERO_WIDTH.test(c)) return 'a zero-width character';
  if (/\p{Cs}/u.test(c)) return 'an unpaired surrogate (not valid Unicode)';
  if (/\p{Cf}/u.test(c)) return 'an invisible formatting character';
  return 'whitespace';
}

/**
 * Why `id` is not a valid function id ("is empty", "contains U+200B (a zero-width character) at
 * index 7"), or null when it is.
 */
export function functionIdProblem(id: string): string | null {
  if (id.length === 0) return 'is empty';
  if (id.length > FUNCTION_ID_MAX_LENGTH) return `is longer than ${FUNCTION_ID_MAX_LENGTH} characters`;
  const m = FORBIDDEN.exec(id);
  if (!m) return null;
  const c = m[0];
  const code = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
  return `contains U+${code} (${kindOf(c)}) at index ${m.index}`;
}
