/**
 * Text that came from a client (a worker's name, a log line, an error message, a function id),
 * made safe to print on a terminal: any token may send escape codes (`\x1b[2J` clears the screen)
 * or line breaks that fake a line of the engine's own (`\n… INFO engine worker svc-state left`).
 *
 * Escaped: every control character (C0, DEL, C1: the terminal's own commands, the line breaks),
 * the bidirectional controls that reorder what is shown (U+061C, U+200E–U+200F, U+202A–U+202E,
 * U+2066–U+2069), the line and paragraph separators (U+2028, U+2029) and the zero-width characters
 * that make one string look like another (U+200B–U+200D, U+2060–U+2064, U+FEFF). Everything else,
 * including every printable non-ASCII letter and backslashes, is left as it is.
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'g');

const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function unicodeEscape(c: string): string {
  return '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
}

/** `text` with what a terminal would act on written as escapes (`\n`, `\u001b`): one line, shown as sent. */
export function printable(text: string): string {
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE_ALL, (c) => SHORT[c] ?? unicodeEscape(c)) : text;
}

/**
 * What JSON.stringify leaves raw inside strings: it escapes C0 there, so a line break or a tab in
 * its output is the indentation of pretty-printed JSON, and stays.
 */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const UNPRINTABLE_IN_JSON_ALL = new RegExp(UNPRINTABLE_IN_JSON.source, 'g');

/**
 * The same for JSON text (`JSON.stringify` output, pretty-printed or not): the characters it
 * leaves raw can stand only inside its strings, where `\uXXXX` means the same character, so the
 * JSON reads back unchanged.
 */
export function printableJson(json: string): string {
  return UNPRINTABLE_IN_JSON.test(json) ? json.replace(UNPRINTABLE_IN_JSON_ALL, unicodeEscape) : json;
}
