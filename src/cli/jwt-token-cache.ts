/**
 * The tokens the coffer command got by JWT login (COFFER_JWT_FILE), kept so that the next command for the
 * same server and the same JWT identity reuses one instead of logging in again (each login makes a token):
 *
 *   $XDG_CONFIG_HOME/coffer/jwt-logins/<sha256 of the server and the identity>.json   {token, renew_at}
 *
 * owner-only (0600 in a 0700 directory, written whole and renamed into place), as `coffer login` keeps its
 * sign-in. A file others may read, or one that does not parse, is not used (and a login makes a new one). A
 * token the server refuses is forgotten.
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { TokenCache } from '../client/index.js';
import { storedLoginPath, writeOwnerOnly } from './stored-login.js';

export function jwtTokenCache(env: NodeJS.ProcessEnv, server: () => string): TokenCache {
  const dir = join(dirname(storedLoginPath(env)), 'jwt-logins');
  const fileOf = (identity: string) =>
    join(dir, `${createHash('sha256').update(`${server()}\0${identity}`).digest('hex')}.json`);
  return {
    read(identity) {
      const file = fileOf(identity);
      try {
        const { mode, uid } = statSync(file);
        if ((mode & 0o077) !== 0 || (process.getuid && uid !== process.getuid())) return undefined;
        const kept = JSON.parse(readFileSync(file, 'utf8')) as {
          token?: unknown;
          renew_at?: unknown;
        };
        if (typeof kept.token !== 'string' || typeof kept.renew_at !== 'number') return undefined;
        return { token: kept.token, renewAt: kept.renew_at };
      } catch {
        return undefined;
      }
    },
    write(identity, entry) {
      try {
        writeOwnerOnly(
          fileOf(identity),
          JSON.stringify({ token: entry.token, renew_at: entry.renewAt }),
        );
      } catch {
        // Not kept: the next command logs in again.
      }
    },
    forget(identity) {
      rmSync(fileOf(identity), { force: true });
    },
  };
}
