/**
 * "Did you mean": the nearest of the names a command takes to one it does not (a typo: `tokn`, `--typ`,
 * `verfy`), by edit distance (leven) — at most 2 edits, and fewer than the name's own length, so that
 * nothing is offered for a word that is not near any.
 */
import { closestMatch } from 'leven';

/** The nearest of `known` to `given`, when one is near enough. */
export function nearest(given: string, known: readonly string[]): string | undefined {
  return closestMatch(given, [...known], { maxDistance: Math.min(2, given.length - 1) });
}

/** ` — did you mean X?`, or nothing. */
export function didYouMean(given: string, known: readonly string[]): string {
  const near = nearest(given, known);
  return near === undefined ? '' : ` — did you mean ${near}?`;
}
