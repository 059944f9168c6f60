/**
 * What a master key provider says about itself. A provider is one file (local-provider.ts,
 * aws-kms-provider.ts, pkcs11-provider.ts) that exports one of these; keys/registry.ts lists them, and
 * everything else is built from the list: the configuration schema and its environment variables
 * (config/), the migrate-key request schema (api/schemas.ts), the rules checked at start-up and on a
 * migration (one function per provider), the CLI's help and path handling, and the table in
 * docs/key-management.md (checked by a test).
 */
import type { KeyProvider } from './key-provider.js';

export interface OpenedProvider {
  readonly provider: KeyProvider;
  /** One line for the start-up log (a warning) when opening the provider did or found something the operator must know. */
  readonly notice?: string;
}

export interface OpenOptions {
  /** A local key file may be created when missing: only by `serve`, for a store that does not exist yet. */
  readonly createKey?: boolean;
}

/** An environment variable a provider reads: the configuration field it sets, and what it means. */
export interface ProviderEnv {
  readonly env: string;
  /** Dotted path into the configuration (`kms.key_id`). */
  readonly field: string;
  readonly kind: 'string' | 'integer';
  readonly meaning: string;
}

/** What is wrong with a provider's settings: the field (dotted) and a sentence saying why. */
export interface SettingsProblem {
  readonly field: string;
  readonly message: string;
}

export interface KeyProviderPlugin<Name extends string = string, Settings extends object = object> {
  /** The configuration's `key_provider` value. */
  readonly name: Name;
  /** One line for the docs table and the CLI help. */
  readonly summary: string;
  /** The top-level configuration fields the provider reads (what the store records about its key). */
  readonly fields: readonly string[];
  /** Those fields as a configuration holds them when nothing is set (what a request leaves out). */
  readonly unset: Settings;
  /** JSON schema of each of those fields in the configuration file (nulls where unset). */
  readonly configSchema: Readonly<Record<string, object>>;
  /** JSON schema of each of those fields in a migrate-key request (omitted where unset; paths absolute). */
  readonly requestSchema: Readonly<Record<string, object>>;
  /**
   * Fields (dotted) that hold paths on the server: the loader (config/load.ts makeAbsolute) makes relative
   * ones absolute from where the server starts, and migrate-key from where the command runs.
   */
  readonly paths: readonly string[];
  readonly env: readonly ProviderEnv[];
  /**
   * Fields that hold secrets (a PIN): set from the environment only, never kept with the keyring. A
   * process's own are handed to the provider it opens (registry.ts secretsOf, settingsOf) where `serves`
   * says they apply — not to a migrate-key request that names a PIN file of its own, say.
   */
  readonly secrets?: {
    readonly fields: readonly string[];
    serves?(settings: Settings): boolean;
  };
  /** A migrate-key request naming a key of this provider, for the help text. */
  readonly example: Readonly<Record<string, unknown>>;
  /**
   * The first rule `settings` break (those a schema cannot say: one field of two, a PIN from a file or the
   * environment), or null. Used by start-up and by migrate-key, so a rule is written once.
   */
  problem(settings: Settings): SettingsProblem | null;
  open(settings: Settings, options: OpenOptions): Promise<OpenedProvider>;
}
