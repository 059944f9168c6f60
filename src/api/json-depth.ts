/**
 * How deep a request body may nest arrays and objects. Checked on the raw bytes before the body is parsed,
 * in one pass with no recursion, so nothing that walks a parsed body (validation, the Unicode check, the
 * audit entry, msgpack) ever meets an attacker-sized depth: a body nesting 8,000 arrays used to end a
 * worker with a stack overflow. No body Coffer accepts nests deeper than 3; the limit leaves room.
 */

export const MAX_JSON_DEPTH = 32;

const [QUOTE, BACKSLASH, OPEN_ARRAY, OPEN_OBJECT, CLOSE_ARRAY, CLOSE_OBJECT] = [
  0x22, 0x5c, 0x5b, 0x7b, 0x5d, 0x7d,
];

/**
 * Whether the JSON text in `bytes` opens more than `max` arrays and objects inside one another. Brackets
 * inside strings do not count. The text need not be valid JSON: what is not is refused by the parser after.
 */
export function nestsDeeperThan(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
  }
  return false;
}
