/**
 * The store: the one door to storage. Everything above it reaches records through the typed record stores
 * it hands out (kv, tokens, the root token, the audit log's records, a rewrap's, the runtime roles), each of which seals,
 * opens and checks its own kind; and the whole-store operations (snapshot, restore, copy, upgrade, the
 * seal report) through here. Nothing outside store/ and storage/ holds a StorageBackend, knows a key's
 * layout, or runs a transaction (test/architecture.test.ts).
 */

import type { FileHandle } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Keyring } from '../crypto/keyring.js';
import { ConfigError } from '../errors.js';
import type { KeyProvider } from '../keys/key-provider.js';
import {
  hasChangeFeed,
  type StorageBackend,
  type StorageGauges,
  type WriteObserver,
} from '../storage/backend.js';
import { type Announced, StorageSettingError } from '../storage/plugin.js';
import { openStorage, type StorageSettings, storeMayExist } from '../storage/registry.js';
import { AuditRecords } from './audit-records.js';
import { setBackend } from './backend-of.js';
import { ConsoleSessionRecords } from './console-session-records.js';
import { EventLog } from './event-log.js';
import { HighWater } from './high-water.js';
import {
  type HolderOptions,
  KEYRING_KEY,
  KeyringHolder,
  storedKeyDescription,
  type WrappingKey,
} from './keyring-store.js';
import { KvRecords } from './kv-records.js';
import { EVENTS_RANGE, GENERATION_KEY, METAS_RANGE, POLICIES_KEY } from './layout.js';
import { PolicyRecords } from './policy-records.js';
import type { RecordIntegrityError } from './record-seal.js';
import { RewrapRecords } from './rewrap-records.js';
import { RootTokenRecord } from './root-token-record.js';
import { type SealReport, type SealReportOptions, sealReport } from './seal-report.js';
import {
  type RestoreKey,
  restoreSnapshot,
  type SnapshotSummary,
  writeSnapshot,
} from './snapshot.js';
import { copyStore } from './store-copy.js';
import { TokenRecords } from './token-records.js';
import { type UpgradeResult, upgradeStore } from './upgrade.js';
import { WebhookRecords } from './webhook-records.js';

export {
  copyTarget,
  describeStore,
  STORAGE_NAMES,
  STORAGE_SETTINGS,
  type StorageName,
  type StorageSettings,
  StorageTargetError,
} from '../storage/registry.js';

/** The writes every server must hear of (on PostgreSQL, announced in the writing transaction). */
const ANNOUNCED: Announced = {
  // Every keyring change (rotation, revocation, a new root token, migration) writes the generation;
  // every change of a runtime role or login role writes the policy document.
  keys: [GENERATION_KEY, POLICIES_KEY],
  // Every write or delete of a key writes its index: the waits (GET …?wait_after) of every server hear it.
  prefixes: [METAS_RANGE.start],
  // Every change of a key writes an event: the event streams of every server hear that the log moved on
  // (as "E", once per commit: they read the log for which events).
  prefixesOnce: [EVENTS_RANGE.start],
};

/** The typed record stores of a store whose keyring is open. */
export interface Records {
  readonly keyring: KeyringHolder;
  readonly kv: KvRecords;
  /** Every change's event, in commit order (store/event-log.ts). */
  readonly events: EventLog;
  readonly tokens: TokenRecords;
  readonly rootToken: RootTokenRecord;
  readonly audit: AuditRecords;
  readonly rewrap: RewrapRecords;
  readonly policies: PolicyRecords;
  readonly consoleSessions: ConsoleSessionRecords;
  readonly webhooks: WebhookRecords;
}

export class Store {
  private constructor(
    private readonly storage: StorageBackend,
    /** Where this host keeps what it has seen of the store (high-water.ts). */
    private readonly dataDir: string,
  ) {
    setBackend(this, storage);
  }

  /** Whether a store may be where `settings` say, found without opening (and so creating) it. */
  static mayExist(settings: StorageSettings): boolean {
    return storeMayExist(settings);
  }

  /** Opens the configured storage (creating nothing but what the backend needs to open). */
  static async open(settings: StorageSettings): Promise<Store> {
    try {
      return new Store(await openStorage(settings, ANNOUNCED), settings.data_dir);
    } catch (err) {
      // A setting the backend cannot use is the configuration's fault, said as every such fault is.
      if (err instanceof StorageSettingError) throw new ConfigError(err.setting, err.problem);
      throw err;
    }
  }

  /** Tells `observer` of every write to the storage from now on (the metrics). */
  observeWrites(observer: WriteObserver): void {
    this.storage.observeWrites?.(observer);
  }

  /** The storage's pool and notifications, where it has them (PostgreSQL), as a scrape reads them. */
  storageGauges(): StorageGauges {
    return this.storage.gauges?.() ?? {};
  }

  /**
   * Several servers may share this store (PostgreSQL): others write it at the same time, so what a server
   * caches must follow their changes, and what it finds of theirs may be in progress.
   */
  get shared(): boolean {
    return this.storage.remote;
  }

  /** undefined when the store has no keyring yet (a new store); else the key it records (null: not recorded). */
  keyDescription(): Promise<string | null | undefined> {
    return storedKeyDescription(this.storage);
  }

  /** Whether the store has a keyring: a store that has been started. */
  async hasKeyring(): Promise<boolean> {
    return (await this.storage.get(KEYRING_KEY)) !== undefined;
  }

  /** Opens the store's keyring, or creates it for a new store (KeyringHolder.open). */
  openKeyring(
    key: KeyProvider | WrappingKey,
    now: number,
    options: HolderOptions = {},
  ): ReturnType<typeof KeyringHolder.open> {
    return KeyringHolder.open(this.storage, key, now, options);
  }

  /**
   * The typed record stores under `keyring`. `onIntegrityError` is told of each record that fails its
   * check where the failure is not thrown (a token refused as if absent, a record left out of a list).
   */
  records(
    keyring: KeyringHolder,
    onIntegrityError: (error: RecordIntegrityError) => void = () => undefined,
  ): Records {
    const seal = keyring.recordSeal;
    return {
      keyring,
      kv: new KvRecords(this.storage, seal, keyring),
      events: new EventLog(this.storage, seal, keyring),
      tokens: new TokenRecords(this.storage, seal, keyring, onIntegrityError),
      rootToken: new RootTokenRecord(this.storage, keyring),
      audit: new AuditRecords(
        this.storage,
        seal,
        new HighWater(
          this.dataDir,
          keyring.instance,
          'a',
          () => keyring.current().recordKeys().mac,
          keyring.anchor,
        ),
      ),
      rewrap: new RewrapRecords(this.storage, seal, keyring),
      policies: new PolicyRecords(this.storage, seal, onIntegrityError),
      consoleSessions: new ConsoleSessionRecords(this.storage, seal, onIntegrityError),
      webhooks: new WebhookRecords(this.storage, seal, onIntegrityError),
    };
  }

  /** Brings the store to the current record format (store/upgrade.ts); null when it is there already. */
  upgrade(keyring: KeyringHolder, log: Logger): Promise<UpgradeResult | null> {
    return upgradeStore(this.storage, keyring, log);
  }

  /** Every stored version counted and form-checked (store/seal-report.ts); with `keyring` null, structure only. */
  sealReport(keyring: Keyring | null, options: SealReportOptions): Promise<SealReport> {
    return sealReport(this.storage, keyring, options);
  }

  /**
   * Calls `listener` when another server changes the keyring (PostgreSQL's NOTIFY), and with undefined
   * after a gap in which such news may have been lost; undefined where the storage cannot tell (a single
   * host's LMDB, whose processes check every second). Returns the function that stops it.
   */
  onKeyringChange(listener: () => void): (() => void) | undefined {
    if (!hasChangeFeed(this.storage)) return undefined;
    // The feed also announces every key's index (for the waits): only the generation is the keyring's.
    return this.storage.onChange((key) => {
      if (key === undefined || Buffer.from(key).equals(GENERATION_KEY)) listener();
    });
  }

  /**
   * Calls `listener` when another server changes the runtime roles or login roles (PostgreSQL's NOTIFY), and
   * after a gap in which such news may have been lost; undefined where the storage cannot tell (LMDB, whose
   * processes check often). Returns the function that stops it.
   */
  onPoliciesChange(listener: () => void): (() => void) | undefined {
    if (!hasChangeFeed(this.storage)) return undefined;
    return this.storage.onChange((key) => {
      if (key === undefined || Buffer.from(key).equals(POLICIES_KEY)) listener();
    });
  }

  /** Resolves when the storage answers a read now (the health check: one read of a small record). */
  async probe(): Promise<void> {
    await this.storage.get(GENERATION_KEY);
  }

  /**
   * Writes a snapshot of the store into `file` (store/snapshot.ts), from one consistent state of it,
   * authenticated under `keyring` (the store's own).
   */
  snapshot(
    file: FileHandle,
    now: number,
    keyring: Keyring,
    onRecord?: (records: number) => void,
  ): Promise<SnapshotSummary> {
    return writeSnapshot(this.storage, file, now, keyring, onRecord);
  }

  /**
   * Restores snapshot `file` into this store, which must be empty; the file is checked whole and
   * authenticated (with the keyring it holds, opened by `key`) before anything is written.
   */
  restore(
    file: string,
    key: RestoreKey,
    onRecord?: (records: number, total: number) => void,
  ): Promise<SnapshotSummary> {
    return restoreSnapshot(this.storage, file, key, onRecord);
  }

  /** Copies every record into `target` (empty, or with `resume` a cut-off copy of this store). */
  copyTo(
    target: Store,
    onRecord?: (records: number) => void,
    options: { readonly resume?: boolean } = {},
  ): Promise<{ records: number; resumedAfter: number }> {
    return copyStore(this.storage, target.storage, onRecord, options);
  }

  close(): Promise<void> {
    return this.storage.close();
  }
}
