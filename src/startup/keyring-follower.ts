/**
 * Following keyring changes made by other processes (rotations, revocations, a new root token): loaded at
 * once where the storage announces them (PostgreSQL's NOTIFY), and within `everyMs` in any case — one
 * read of the generation record when nothing changed (follow-changes.ts).
 */
import type { Logger } from 'pino';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { Store } from '../store/store.js';
import { followChanges } from './follow-changes.js';

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
  return followChanges({
    read: () => deps.keyring.refresh().then(deps.afterRefresh),
    onChange: (listener) => deps.store.onKeyringChange(listener),
    everyMs: deps.everyMs,
    log: deps.log,
    what: 'the keyring',
  });
}
