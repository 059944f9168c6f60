/**
 * What a storage backend says about itself. A backend is one file exporting one of these (lmdb-backend.ts,
 * postgres-storage.ts) and one line in storage/registry.ts; its settings (schemas with their `COFFER_*`
 * variables and help) join the configuration (config/settings.ts), its checks run against the one
 * conformance suite (test/storage/conformance.ts).
 */
import type { TSchema } from '@sinclair/typebox';
import type { StorageBackend } from './backend.js';

/**
 * The settings a backend is opened with: the configuration, of which each backend reads its own settings
 * (declared in `settings`) besides these.
 */
export interface StorageSettings {
  readonly storage: string;
  readonly data_dir: string;
}

/**
 * The writes every server must hear of (PostgreSQL announces them: NOTIFY, in the writing transaction).
 * Which records those are is the store's knowledge (store/store.ts), never the backend's.
 */
export interface Announced {
  readonly keys: readonly Uint8Array[];
  /** Every key that starts with one of these. */
  readonly prefixes: readonly Uint8Array[];
  /**
   * A write of a key that starts with one of these is announced as the prefix itself, once per commit
   * however many it wrote: for keys whose listeners need to hear that something changed, not which.
   */
  readonly prefixesOnce?: readonly Uint8Array[];
}

/** What a raw opening announces (tests, copies): nothing. */
export const NOTHING_ANNOUNCED: Announced = { keys: [], prefixes: [] };

export interface StoragePlugin<Name extends string = string> {
  /** The configuration's `storage` value. */
  readonly name: Name;
  /**
   * Its own settings: top-level configuration properties, each a schema with `env` (its variable),
   * `description`, and `envOnly` for one that may not come from a file (a password).
   */
  readonly settings: Readonly<Record<string, TSchema>>;
  open(settings: StorageSettings, announced: Announced): Promise<StorageBackend>;
  /**
   * Whether a store could be there without opening it (which may create it). A database answers true:
   * opening it tells (a store there has a keyring).
   */
  mayExist(settings: StorageSettings): boolean;
  /**
   * A copy's destination, `coffer operator migrate-storage --to NAME[:WHERE]`: the settings that open it,
   * from WHERE (what follows the name and a colon; undefined without one) and the source's configuration.
   * Throws StorageTargetError saying what WHERE must be.
   */
  target(where: string | undefined, config: StorageSettings): StorageSettings;
  /** How `--to` names this backend, for the CLI's words: `lmdb:DIR`, `postgres[:URL]`. */
  readonly targetForm: string;
  /** Whether `a` and `b` (both of this backend) open the same store. */
  sameStore(a: StorageSettings, b: StorageSettings): boolean;
  /** Where a store of these settings is, in words, without any secret (a copy's report). */
  describe(settings: StorageSettings): string;
}

/** A `--to` that names no backend, or a WHERE its backend cannot take; the message says what it must be. */
export class StorageTargetError extends Error {
  override name = 'StorageTargetError';
}

/** A backend's setting that cannot be used, named by its variable, never shown (it may hold a password). */
export class StorageSettingError extends Error {
  override name = 'StorageSettingError';
  constructor(
    readonly setting: string,
    readonly problem: string,
  ) {
    super(`${setting}: ${problem}`);
  }
}
