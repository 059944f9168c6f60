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

/** The first string (value or member name) in a parsed JSON body that is not valid Unicode, as a field issue. */
export function illFormedString(value: unknown, pointer = ''): FieldIssue | undefined {
  if (typeof value === 'string') {
    return isWellFormed(value)
      ? undefined
      : {
          field: pointer,
          in: 'body',
          message: 'is not valid Unicode (it holds a lone surrogate, e.g. \\ud800)',
        };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const issue = illFormedString(value[i], `${pointer}/${i}`);
      if (issue) return issue;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [name, member] of Object.entries(value)) {
      if (!isWellFormed(name))
        return {
          field: pointer,
          in: 'body',
          message: 'has a member name that is not valid Unicode (a lone surrogate)',
        };
      const issue = illFormedString(member, `${pointer}/${escapePointer(name)}`);
      if (issue) return issue;
    }
  }
  return undefined;
}
