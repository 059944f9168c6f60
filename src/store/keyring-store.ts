/**
 * The keyring this process uses (KeyringHolder), stored as the keyring record (keyring-record.ts) and the
 * generation record (keyring-generation.ts).
 *
 * Several processes share one store, so every change of the keyring (rotation, revocation, root token,
 * migration) bumps the generation, and stores the keyring with that generation inside it (its `epoch`).
 * A process holds the keyring of one generation; writes read the generation inside their own transaction
 * and refuse to seal under a stale keyring, so once a rotation has committed, no process writes under the
 * old active version again. A running process only ever follows a keyring with the permanent root key it
 * started with: a keyring record replaced by one made elsewhere is refused, not used.
 *
 * Rollback (an older copy of the keyring or its generation put back by someone who can write the storage,
 * which would bring back revoked tokens and retired keys): generations and epochs only grow, so
 *   - a keyring whose epoch is below the generation stored beside it is refused (at start and when followed);
 *   - a running process never accepts a generation or keyring older than one it has held: it fails closed —
 *     every read and write through the record stores answers 500 integrity_error (`guard`) — until the
 *     store holds a keyring at least as new again;
 *   - each host keeps the newest generation it has seen in its data directory (high-water.ts), and a
 *     starting server refuses a store older than that.
 * What none of this can tell from a restore is a whole-store rollback that also takes every server's data
 * directory back: SECURITY.md.
 *
 * A migration (migrate-key) rewraps the same keyring under another master key in one write, so a crash
 * leaves the store openable by exactly one of the two keys. The record names that key: start-up says which
 * key it needs, and running processes, which learn of the migration through the generation, open the new
 * provider from those settings and follow.
 */

import { timingSafeEqual } from 'node:crypto';
import { pack } from 'msgpackr';
import { Keyring, type Revocation } from '../crypto/keyring.js';
import { randomBase62 } from '../crypto/random.js';
import type { KeyProvider } from '../keys/key-provider.js';
import type { StorageBackend } from '../storage/backend.js';
import type { EventDraft } from './event-log.js';
import { GENERATION_KEY, packGeneration } from './keyring-generation.js';
import {
  KEYRING_KEY,
  loadStored,
  storedRecord,
  type WrappingKey,
  wrapContext,
} from './keyring-record.js';
import { type HolderOptions, KeyringState, sha256, type WrappingInfo } from './keyring-state.js';
import { ROOT_TOKEN_KEY } from './layout.js';
import { type RecordIntegrityError, RecordSeal } from './record-seal.js';

export { GENERATION_KEY, type GenerationStamp, StaleKeyringError } from './keyring-generation.js';
export { KEYRING_KEY, storedKeyDescription, type WrappingKey } from './keyring-record.js';
export type { HolderOptions, WrappingInfo } from './keyring-state.js';

export class KeyringHolder extends KeyringState {
  /** Told when this process has committed events that no key's change announces (a rotation, a revocation). */
  private readonly eventListeners = new Set<() => void>();

  /**
   * Calls `listener` each time this process commits a keyring event (a rotation) or a token revocation:
   * events in the log that no change of a key announces, which the event streams and webhooks of this
   * process and its siblings must still hear of (kv/module.ts). Returns the function that stops it.
   */
  onEventsWritten(listener: () => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** This process has just committed such events (token-records.ts's revocations, the rotations below). */
  eventsWritten(): void {
    for (const listener of this.eventListeners) listener();
  }

  /**
   * Opens the store's keyring, or creates it for a new store. A generation record that fails its MAC, or
   * is older than the keyring, is replaced by the next generation (every process then reloads the keyring,
   * which the master key authenticates) and returned as `replaced`, for the caller to log and audit. A
   * keyring older than its generation, or than this host has seen, is refused (RecordIntegrityError).
   */
  static async open(
    storage: StorageBackend,
    key: KeyProvider | WrappingKey,
    now: number,
    options: HolderOptions = {},
  ): Promise<{ holder: KeyringHolder; created: boolean; replaced?: RecordIntegrityError }> {
    const wrapping: WrappingKey = 'wrap' in key ? { provider: key } : key;
    const existing = await loadStored(storage, wrapping.provider);
    if (existing) {
      const holder = new KeyringHolder(
        storage,
        wrapping,
        options,
        existing.keyring,
        { generation: 0, bytes: new Uint8Array(0) },
        existing.stored,
        existing.stored.instance,
      );
      const replaced = await holder.settleOpened(existing.generationBytes);
      // Stores from before the audit log get their audit key once, like any keyring change; keyrings from
      // before epochs get theirs the same way.
      if (!existing.keyring.hasAuditKey || existing.keyring.epoch === undefined)
        await holder.change((keyring) =>
          keyring.hasAuditKey && keyring.epoch !== undefined ? null : keyring.withAuditKey(),
        );
      return { holder, created: false, ...(replaced ? { replaced } : {}) };
    }

    const generated = Keyring.generate(now);
    const root = await options.newStoreRoot?.(new RecordSeal(() => generated.recordKeys()));
    const keyring = (root ? generated.withRootRecord(sha256(root)) : generated).withEpoch(1);
    const instance = randomBase62(16);
    const stored = await storedRecord(wrapping, keyring, instance, 0, undefined);
    const record = pack(stored);
    const generation = packGeneration(keyring, 1);
    // Another process may have created the keyring meanwhile: then that one wins and is used.
    const created = await storage.atomic([KEYRING_KEY], ([current]) =>
      current
        ? { writes: [], result: false }
        : {
            writes: [
              { op: 'put', key: KEYRING_KEY, value: record },
              { op: 'put', key: GENERATION_KEY, value: generation },
              ...(root ? [{ op: 'put' as const, key: ROOT_TOKEN_KEY, value: root }] : []),
            ],
            result: true,
          },
    );
    if (!created) return KeyringHolder.open(storage, wrapping, now, options);
    const holder = new KeyringHolder(
      storage,
      wrapping,
      options,
      keyring,
      { generation: 1, bytes: generation },
      stored,
      instance,
    );
    holder.highWater?.record([1, 1]);
    return { holder, created: true };
  }

  /**
   * Rewraps the keyring under `target` in one write (O(1) in the number of records), after checking that
   * `target` opens what it wrapped. Every process follows on its next keyring load.
   */
  async migrate(target: WrappingKey, now: number): Promise<WrappingInfo> {
    for (;;) {
      await this.refresh();
      const from = this.stamped.generation;
      const keyring = this.keyring.withEpoch(from + 1);
      const stored = await storedRecord(
        target,
        keyring,
        this.instance,
        (this.stored.migration ?? 0) + 1,
        now,
      );
      const check = await target.provider.unwrap(stored.wrapped, wrapContext(this.instance));
      if (!Buffer.from(check).equals(Buffer.from(keyring.serialize())))
        throw new Error('the new master key did not give back the keyring it wrapped');
      if (await this.commit(from, stored, keyring, [])) {
        this.key = target;
        return this.wrapping();
      }
    }
  }

  /**
   * Adds a keyring version and makes it the active one, for every process sharing the store. Returns the
   * new active version.
   */
  async rotate(now: number, actor = 'system'): Promise<number> {
    const next = await this.change((keyring) => keyring.rotate(now), [], rotated(actor));
    this.eventsWritten();
    return next.activeVersion;
  }

  /**
   * Rotates when the active version is at least `maxAgeMs` old, as seen after loading the latest keyring:
   * several processes checking at once rotate once. Returns the new active version, or null.
   */
  async rotateIfOlderThan(maxAgeMs: number, now: number): Promise<number | null> {
    const due = (keyring: Keyring): boolean => now - keyring.activeCreatedAt >= maxAgeMs;
    let done = false;
    const next = await this.change(
      (keyring) => {
        done = due(keyring);
        return done ? keyring.rotate(now) : null;
      },
      [],
      rotated('system'),
    );
    if (!done) return null;
    this.eventsWritten();
    return next.activeVersion;
  }

  /** The revocation of token `id` as the keyring this process holds records it, if any. */
  revocationOf(id: string): Revocation | undefined {
    return this.keyring.revocationOf(id);
  }

  /** Records the revocation of token `id` in the keyring (once; SECURITY.md, "Storage"). */
  async recordRevocation(id: string, revocation: Revocation): Promise<void> {
    await this.change((keyring) =>
      keyring.revocationOf(id) ? null : keyring.withRevoked(id, revocation),
    );
  }

  /** Records in the keyring that the store's records are in `format` now (store/upgrade.ts). */
  async setStoreFormat(format: number): Promise<void> {
    await this.change((keyring) =>
      keyring.storeFormat >= format ? null : keyring.withStoreFormat(format),
    );
  }

  /**
   * Whether the stored root token record `bytes` is the one the keyring names: `unnamed` while it names
   * none (a store from before this check, until its next start names the record it has).
   */
  rootRecordIs(bytes: Uint8Array): 'named' | 'other' | 'unnamed' {
    const named = this.keyring.rootRecord;
    if (named === undefined) return 'unnamed';
    const digest = sha256(bytes);
    return named.byteLength === digest.byteLength && timingSafeEqual(named, digest)
      ? 'named'
      : 'other';
  }

  /**
   * Names root token record `bytes` in the keyring, writing it at `key` in the same transaction when
   * `write` is set. With `onlyIfUnnamed` nothing changes when the keyring names a record already (another
   * process set one first). Resolves to whether the keyring now names these bytes.
   */
  async nameRootRecord(
    key: Uint8Array,
    bytes: Uint8Array,
    options: { write: boolean; onlyIfUnnamed: boolean },
  ): Promise<boolean> {
    const digest = sha256(bytes);
    await this.change(
      (keyring) =>
        options.onlyIfUnnamed && keyring.rootRecord !== undefined
          ? null
          : keyring.withRootRecord(digest),
      options.write ? [{ op: 'put', key, value: bytes }] : [],
    );
    return this.rootRecordIs(bytes) === 'named';
  }

  /** Removes keyring versions; the caller has checked that no record names them. */
  async retire(versions: readonly number[]): Promise<void> {
    await this.change((keyring) => keyring.without(versions));
  }
}

/** A rotation's event (store/event-log.ts): the new active version, and who rotated. */
function rotated(actor: string): (next: Keyring) => readonly EventDraft[] {
  return (next) => [{ kind: 'keyring', operation: 'rotate', version: next.activeVersion, actor }];
}
