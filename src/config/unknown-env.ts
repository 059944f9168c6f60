/**
 * `COFFER_*` variables that no setting reads. A misspelled one (COFFER_PORTT) used to be ignored without a
 * word, so the server ran with the default instead: each is named at start-up with the closest real name.
 */
import { closestMatch } from 'leven';

/**
 * Variables read elsewhere than the settings: the configuration file's path, and the client's and the
 * commands' server address, token and fallback key (client/coffer.ts, cli/fallback.ts).
 */
export const READ_ELSEWHERE = [
  'COFFER_CONFIG',
  'COFFER_ADDR',
  'COFFER_TOKEN',
  'COFFER_TOKEN_FILE',
  'COFFER_JWT_FILE',
  'COFFER_LOGIN_ROLE',
  'COFFER_FALLBACK_KEY',
];
const TEST_PREFIX = 'COFFER_TEST_';

/** One warning line for each `COFFER_*` name in `env` that Coffer does not read, naming the closest real one. */
export function unknownSettingWarnings(
  env: Readonly<Record<string, string | undefined>>,
  known: readonly string[],
): string[] {
  const names = [...known, ...READ_ELSEWHERE];
  const all = new Set(names);
  return Object.keys(env)
    .filter((name) => name.startsWith('COFFER_') && !all.has(name) && !name.startsWith(TEST_PREFIX))
    .sort()
    .map((name) => {
      // A name cut short (COFFER_AUDIT_SYNC_EVERY), else the nearest when it is a plausible slip: at most a
      // third of the name differs.
      const closest =
        names.find((real) => real.startsWith(name)) ??
        closestMatch(name, names, { maxDistance: Math.max(2, Math.floor(name.length / 3)) });
      return `${name} is not a Coffer setting and is ignored${closest ? `; did you mean ${closest}?` : ''}`;
    });
}
