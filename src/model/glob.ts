/**
 * Globs with `*` (any run of characters, `/` included) and nothing else special, matched without a regular
 * expression: a pattern may come from a request (a Vault event subscription's `{type}`) or from a role an
 * administrator wrote (`bound_subject`, `bound_claims`), and a regular expression built from either would
 * backtrack (`a*a*a*…b` against a long run of `a`s doubles its cost with every star).
 *
 * The match is greedy and never goes back: the part before the first `*` is the text's prefix, the part
 * after the last `*` its suffix, and each part between is found at its leftmost place after the one before.
 * Taking the leftmost place is always right: a later place leaves less text for the parts after it and
 * never more. Cost: each part is searched for once, over text not yet consumed — O(text × part) at worst,
 * for a pattern of at most 128 characters no more than a few microseconds.
 */

/** A compiled glob: call it with a text. */
export type Glob = (text: string) => boolean;

/** The matcher for `pattern`. */
export function compileGlob(pattern: string): Glob {
  const parts = pattern.split('*');
  if (parts.length === 1) return (text) => text === pattern;
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  const middle = parts.slice(1, -1).filter((part) => part !== '');
  const fixed = first.length + last.length;
  return (text) => {
    if (text.length < fixed || !text.startsWith(first) || !text.endsWith(last)) return false;
    let at = first.length;
    const end = text.length - last.length;
    for (const part of middle) {
      const found = text.indexOf(part, at);
      if (found === -1 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}

/** Whether `text` matches `pattern` (see compileGlob). */
export function globMatches(pattern: string, text: string): boolean {
  return compileGlob(pattern)(text);
}
