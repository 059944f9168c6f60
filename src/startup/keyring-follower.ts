/**
 * Following keyring changes made by other processes (rotations, revocations, a new root token): loaded at
 * once where the storage announces them (PostgreSQL's NOTIFY), and within `everyMs` in any case — one
 * read of the generation record when nothing changed. One check at a time: a notification arriving during
 * a check makes one more check after it.
 */
import type { Logger } from 'pino';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { Store } from '../store/store.js';

export interface KeyringFollower {
  stop(): void;
}

export function followKeyring(deps: {
  readonly store: Pick<Store, 'onKeyringChange'>;
  readonly keyring: Pick<KeyringHolder, 'refresh'>;
  /** Runs after each reload (the root token follows the keyring). */
  readonly afterRefresh: () => Promise<void>;
  readonly everyMs: number;
  readonly log: Logger;
}): KeyringFollower {
  let following: Promise<void> | null = null;
  let again = false;
  const check = (): void => {
    if (following) {
      again = true;
      return;
    }
    following = deps.keyring
      .refresh()
      .then(deps.afterRefresh)
      .catch((err: unknown) =>
        deps.log.error(
          { err: { message: (err as Error).message } },
          'could not reload the keyring',
        ),
      )
      .finally(() => {
        following = null;
        if (again) {
          again = false;
          check();
        }
      });
  };
  const timer = setInterval(check, deps.everyMs);
  timer.unref();
  const unwatch = deps.store.onKeyringChange(check);
  return {
    stop() {
      clearInterval(timer);
      unwatch?.();
    },
  };
}
