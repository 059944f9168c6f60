/**
 * The token `coffer login --oidc` got, kept for the person's later commands: one JSON file,
 * `$XDG_CONFIG_HOME/coffer/login.json` (else `~/.config/coffer/login.json`), readable by its owner only
 * (0600 in a 0700 directory, written whole and renamed into place). It names the server it came from, and is
 * used only for that server: a COFFER_ADDR naming another one never gets it. A file that others may read is
 * refused, as ssh refuses such a key.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

export interface StoredLogin {
  /** The server the token is for, as COFFER_ADDR would name it. */
  readonly addr: string;
  readonly token: string;
  readonly token_id: string;
  readonly expires_at: string | null;
  readonly login_role: string;
  readonly subject?: string;
  readonly role?: string | null;
}

export function storedLoginPath(env: NodeJS.ProcessEnv): string {
  const base =
    env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME !== ''
      ? env.XDG_CONFIG_HOME
      : join(env.HOME ?? homedir(), '.config');
  return join(base, 'coffer', 'login.json');
}

/** The stored login, or undefined when there is none; a file others may read, or a damaged one, is refused. */
export function readStoredLogin(env: NodeJS.ProcessEnv): StoredLogin | undefined {
  const path = storedLoginPath(env);
  let text: string;
  try {
    if (process.platform !== 'win32') {
      const { mode, uid } = statSync(path);
      if ((mode & 0o077) !== 0 || (process.getuid && uid !== process.getuid()))
        throw new CliError(
          `${path} may be read by others than you: remove it (coffer logout) and sign in again`,
          EXIT.usage,
        );
    }
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const login = JSON.parse(text) as StoredLogin;
    if (typeof login.addr === 'string' && typeof login.token === 'string') return login;
  } catch {
    // refused below
  }
  throw new CliError(`${path} is not a stored sign-in: remove it and sign in again`, EXIT.usage);
}

/**
 * Writes `text` to `path` owner-only (0600 in a 0700 directory), replacing any other whole: written to a
 * temporary file, synced, renamed into place, so no reader sees a half-written one.
 */
export function writeOwnerOnly(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

/** Stores `login` owner-only, replacing any other whole (no reader sees a half-written file). */
export function writeStoredLogin(env: NodeJS.ProcessEnv, login: StoredLogin): string {
  const path = storedLoginPath(env);
  writeOwnerOnly(path, `${JSON.stringify(login, null, 2)}\n`);
  return path;
}

export function removeStoredLogin(env: NodeJS.ProcessEnv): void {
  rmSync(storedLoginPath(env), { force: true });
}

/** Whether two server addresses are the same server (scheme, host and port; a trailing / aside). */
export function sameServer(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}
