/**
 * The directories Coffer writes to (data, audit, the master key's), made or checked before anything is
 * created in them, so that a bad path stops start-up with one line naming its setting instead of a raw
 * EACCES or ENOTDIR, and nothing (no master key, no store) is left half made. Made one level at a time:
 * Node's recursive mkdir never returns under /proc.
 */
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from './errors.js';

const reason = (err: unknown): string =>
  (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/** Makes `path` (mode 0700) and any missing parents, or throws a ConfigError naming `setting`. */
export function ensureDirectory(path: string, setting: string): void {
  const missing: string[] = [];
  let existing = resolve(path);
  while (!existsSync(existing)) {
    missing.unshift(existing);
    const parent = dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  try {
    if (!statSync(existing).isDirectory())
      throw new ConfigError(setting, `${existing} is a file, not a directory; choose another path`);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(setting, `cannot use ${existing} (${reason(err)})`);
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      throw new ConfigError(
        setting,
        `cannot create ${dir} (${reason(err)}); choose a directory this user can create, or create it yourself`,
      );
    }
  }
  try {
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new ConfigError(
      setting,
      `${path} is not writable by this user (${reason(err)}); fix its owner or mode, or choose another directory`,
    );
  }
}
