/**
 * Opening the store for a server process: the storage, the master key, the keyring (created with the root
 * token for a new store), the store format upgrade and the root token. The process that prepares the store
 * (the supervisor, or a process on its own) does all of it; a worker of the supervisor only opens what the
 * supervisor prepared, and refuses a store that is not.
 */
import type { Logger } from 'pino';
import { Argon2Gate } from '../auth/argon2-gate.js';
import {
  type EstablishedRoot,
  establishRootToken,
  NewStoreRoot,
  type RootRecord,
} from '../auth/root-token.js';
import type { CofferConfig } from '../config/schema.js';
import { sodiumReady } from '../crypto/aead.js';
import { STORE_FORMAT } from '../crypto/keyring.js';
import { ensureDirectory } from '../directories.js';
import { ConfigError } from '../errors.js';
import { KeyProviderError } from '../keys/key-provider.js';
import { MissingMasterKeyError } from '../keys/local-provider.js';
import {
  type OpenedProvider,
  openKeyProvider,
  type ProviderConfig,
  providerConfig,
  secretsOf,
  settingsOf,
} from '../keys/registry.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import { RecordIntegrityError } from '../store/record-seal.js';
import { Store } from '../store/store.js';
import type { UpgradeResult } from '../store/upgrade.js';

export interface OpenedStore {
  readonly store: Store;
  readonly keyring: KeyringHolder;
  readonly root: RootRecord;
  /** How this process changed the root token, for the audit log. */
  readonly rootChange: EstablishedRoot['change'];
  /** What this process's store upgrade did, for the audit log; null when there was none. */
  readonly upgraded: UpgradeResult | null;
  /** A keyring generation record that failed its check and was replaced, for the audit log. */
  readonly replaced: RecordIntegrityError | null;
}

export interface OpenStoreOptions {
  /** false for a worker of the supervisor, which prepared the store before starting it. */
  readonly prepare: boolean;
  readonly now: () => number;
  /** Receives a generated root token, the only time it exists in clear. */
  readonly onGeneratedRootToken?: (token: string) => void;
}

/** Opens (and, preparing, creates or upgrades) the store; closes it again when anything fails. */
export async function openStore(
  config: CofferConfig,
  log: Logger,
  options: OpenStoreOptions,
): Promise<OpenedStore> {
  const { now, prepare } = options;
  await sodiumReady();
  ensureDirectory(config.data_dir, 'COFFER_DATA_DIR');
  ensureDirectory(config.audit.dir!, 'COFFER_AUDIT_DIR');
  const store = await Store.open(config);
  try {
    // A master key is made only for a store that does not exist yet: never next to an existing store whose
    // own key file is missing (a new key would not open it, and could be backed up in its place).
    const existing = await store.keyDescription();
    const opened = await openMasterKey(config, existing, prepare);
    if (opened.notice) log.warn(opened.notice);
    else if (existing === undefined)
      log.warn(
        `${config.data_dir} holds no store yet, but the master key already exists: creating a new store and root token (check COFFER_DATA_DIR if you meant an existing store)`,
      );
    const reopen = async (target: ProviderConfig) =>
      (await openKeyProvider(settingsOf(target, secretsOf(config)))).provider;
    const argon2 = new Argon2Gate();
    const newRoot = prepare ? new NewStoreRoot(argon2, config.root_token, now()) : undefined;
    const {
      holder: keyring,
      created,
      replaced = null,
    } = await store.openKeyring(
      { provider: opened.provider, config: providerConfig(config) },
      now(),
      { reopen, dataDir: config.data_dir, ...(newRoot ? { newStoreRoot: newRoot.seal } : {}) },
    );
    if (created) log.info('created a new keyring, wrapped by %s', opened.provider.description);
    if (replaced)
      log.error(
        { kind: replaced.kind, key: replaced.storageKey },
        'INTEGRITY ERROR: the keyring generation record failed its integrity check; replaced by a new generation',
      );
    const rootRecord = store.records(keyring).rootToken;
    if (!prepare) {
      if (keyring.current().storeFormat < STORE_FORMAT)
        throw new Error(
          'the store is not upgraded yet; it is upgraded by the process that prepares the store',
        );
      const root = (await rootRecord.read())?.record;
      if (!root)
        throw new Error(
          'the store has no root token yet; it is set up by the process that prepares the store',
        );
      return { store, keyring, root, rootChange: null, upgraded: null, replaced };
    }
    const upgraded = await store.upgrade(keyring, log);
    // The next event's position follows every one the store holds, however it was copied or restored.
    await store.records(keyring).events.alignPositions();
    // A new store got its root token with its keyring; an existing one keeps or replaces its own.
    const root =
      (created ? newRoot?.established : undefined) ??
      (await establishRootToken(rootRecord, argon2, config.root_token, now()));
    if (root.generated) options.onGeneratedRootToken?.(root.generated);
    return { store, keyring, root: root.record, rootChange: root.change, upgraded, replaced };
  } catch (err) {
    await store.close();
    if (err instanceof RecordIntegrityError && err.kind === 'root-token') {
      throw new ConfigError(
        'COFFER_ROOT_TOKEN',
        `${err.message} and is not used; start once with COFFER_ROOT_TOKEN set to a new root token (at least 32 characters, e.g. openssl rand -base64 32) to replace it`,
      );
    }
    throw err;
  }
}

/** The configured master key; created only for a new store, by the process that prepares it. */
async function openMasterKey(
  config: CofferConfig,
  existing: string | null | undefined,
  prepare: boolean,
): Promise<OpenedProvider> {
  try {
    return await openKeyProvider(config, { createKey: existing === undefined && prepare });
  } catch (err) {
    if (err instanceof MissingMasterKeyError && existing !== undefined) {
      throw new KeyProviderError(
        err.setting,
        `${err.message}; the store in ${config.data_dir} needs its own key, ${existing ?? 'the one it was created with'}: restore that file from your backup or configure that key (Coffer creates a key only for a new store)`,
      );
    }
    throw err;
  }
}
