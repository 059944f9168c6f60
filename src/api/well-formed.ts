/**
 * Strings Coffer accepts must be valid Unicode, so that what is stored comes back exactly as written. JSON
 * escapes can spell a lone surrogate ("\ud800"), which has no UTF-8 form: stored, it would be changed
 * (U+FFFD) or fail its own integrity check on every read. Such strings are refused with a 400 naming where
 * they are; every other string is kept as it is.
 */
import type { FieldIssue } from '../errors.js';

/** A UTF-16 code unit of a surrogate pair that has no partner. */
const LONE_SURROGATE = /\p{Cs}/u;

export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

const escapePointer = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The first string (value or member name) in a parsed JSON body that is not valid Unicode, as a field issue.
 * A walk with its own stack, not recursion: whatever the depth, it cannot overflow the call stack.
 */
export function illFormedString(body: unknown): FieldIssue | undefined {
  const pending: { value: unknown; pointer: string }[] = [{ value: body, pointer: '' }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, pointer } = next;
    if (typeof value === 'string') {
      if (!isWellFormed(value))
        return {
          field: pointer,
          in: 'body',
          message: 'is not valid Unicode (it holds a lone surrogate, e.g. \\ud800)',
        };
    } else if (Array.isArray(value)) {
      // Pushed last first, so the first ill-formed string in document order is the one reported.
      for (let i = value.length - 1; i >= 0; i--)
        pending.push({ value: value[i], pointer: `${pointer}/${i}` });
    } else if (value !== null && typeof value === 'object') {
      const members = Object.entries(value);
      if (members.some(([name]) => !isWellFormed(name)))
        return {
          field: pointer,
          in: 'body',
          message: 'has a member name that is not valid Unicode (a lone surrogate)',
        };
      for (let i = members.length - 1; i >= 0; i--) {
        const [name, member] = members[i]!;
        pending.push({ value: member, pointer: `${pointer}/${escapePointer(name)}` });
      }
    }
  }
  return undefined;
}
