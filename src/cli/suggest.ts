/**
 * "Did you mean" for the server package's commands (the client package's coffer-run has none: leven is
 * no dependency of it): the nearest of the names a command takes to one it does not (a typo: `tokn`, `--typ`,
 * `verfy`), by edit distance (leven) — at most 2 edits, and fewer than the name's own length, so that
 * nothing is offered for a word that is not near any.
 */
import { closestMatch } from 'leven';
import { CliError, EXIT } from './exit-codes.js';

/** The nearest of `known` to `given`, when one is near enough. */
export function nearest(given: string, known: readonly string[]): string | undefined {
  return closestMatch(given, [...known], { maxDistance: Math.min(2, given.length - 1) });
}

/** ` — did you mean X?`, or nothing. */
export function didYouMean(given: string, known: readonly string[]): string {
  const near = nearest(given, known);
  return near === undefined ? '' : ` — did you mean ${near}?`;
}

/** The suggester argumentsError takes, for a command's options (`Object.keys` of parseArgs's). */
export function optionSuggester(known: readonly string[]): (name: string) => string | undefined {
  const long = known.filter((name) => name.length > 1);
  return (name) => nearest(name, long);
}

/** `coffer <group> <given>: no such command — did you mean …? (coffer <group> --help)`: exit 2. */
export function noSuchCommand(group: string, given: string, known: readonly string[]): CliError {
  const where = group === '' ? 'coffer' : `coffer ${group}`;
  return new CliError(
    `${where} ${given}: no such command${didYouMean(given, known)} (${where} --help)`,
    EXIT.usage,
  );
}
