import { KMSClient } from '@aws-sdk/client-kms';
import { AwsKmsProvider } from './aws-kms-provider.js';
import { type KeyProvider, KeyProviderError } from './key-provider.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from './local-provider.js';
import { PassphraseKeyProvider, readPassphraseFile } from './passphrase-provider.js';
import { Pkcs11KeyProvider } from './pkcs11-provider.js';
import { readOwnerOnlyFile } from './secret-file.js';

export interface KeyProviderSettings {
  readonly key_provider: 'local' | 'aws-kms' | 'pkcs11';
  readonly kms: {
    readonly key_id: string | null;
    readonly region: string | null;
    readonly endpoint: string | null;
  };
  readonly pkcs11: {
    readonly library: string | null;
    readonly slot: number | null;
    readonly token_label: string | null;
    readonly key_label: string | null;
    readonly pin_file: string | null;
  };
  /** The PKCS#11 PIN when it comes from the environment rather than pkcs11.pin_file. */
  readonly pkcs11_pin?: string;
  readonly master_key_file: string;
  /** When set, the local master key is derived from this file's passphrase and no key file is used. */
  readonly master_passphrase_file: string | null;
}

export interface OpenedProvider {
  readonly provider: KeyProvider;
  /** One line for the start-up log (a warning) when opening the provider did or found something the operator must know. */
  readonly notice?: string;
}

/**
 * The settings of one provider alone, without secrets (a PIN comes from the environment or a file it
 * names): what the store records next to the keyring it wraps, so that every process can follow a
 * migration and start-up can say which key opens the store.
 */
export type ProviderConfig = Pick<KeyProviderSettings, 'key_provider'> &
  Partial<
    Pick<KeyProviderSettings, 'master_key_file' | 'master_passphrase_file' | 'kms' | 'pkcs11'>
  >;

export interface OpenOptions {
  /** A local key file may be created when missing: only by `serve`, for a store that does not exist yet. */
  readonly createKey?: boolean;
}

interface ProviderEntry {
  /** The fields of KeyProviderSettings this provider reads. */
  readonly settings: readonly ('master_key_file' | 'master_passphrase_file' | 'kms' | 'pkcs11')[];
  open(settings: KeyProviderSettings, options: OpenOptions): Promise<OpenedProvider>;
}

/** Key providers by configuration name. A new provider is one file plus one entry here. */
const PROVIDERS: Record<KeyProviderSettings['key_provider'], ProviderEntry> = {
  'aws-kms': {
    settings: ['kms'],
    open: async ({ kms }) => ({
      provider: new AwsKmsProvider(
        new KMSClient({
          ...(kms.region === null ? {} : { region: kms.region }),
          ...(kms.endpoint === null ? {} : { endpoint: kms.endpoint }),
          maxAttempts: 5,
        }),
        kms.key_id!,
        kms.region,
      ),
    }),
  },
  pkcs11: {
    settings: ['pkcs11'],
    open: async ({ pkcs11, pkcs11_pin }) =>
      Pkcs11KeyProvider.open(
        {
          library: pkcs11.library!,
          slot: pkcs11.slot,
          token_label: pkcs11.token_label,
          key_label: pkcs11.key_label!,
        },
        pkcs11.pin_file === null ? pkcs11_pin! : readPin(pkcs11.pin_file),
      ),
  },
  local: {
    settings: ['master_key_file', 'master_passphrase_file'],
    open: async (settings, { createKey = false }) => {
      if (settings.master_passphrase_file !== null) {
        return {
          provider: new PassphraseKeyProvider(
            readPassphraseFile(settings.master_passphrase_file),
            `local passphrase file ${settings.master_passphrase_file}`,
          ),
        };
      }
      const file = loadOrCreateMasterKey(settings.master_key_file, createKey);
      return {
        provider: new LocalKeyProvider(
          file.key,
          `local master key file ${settings.master_key_file}`,
        ),
        ...(file.created
          ? {
              notice: `generated a new local master key at ${settings.master_key_file} (mode 0600); back it up`,
            }
          : {}),
      };
    },
  },
};

export function openKeyProvider(
  settings: KeyProviderSettings,
  options: OpenOptions = {},
): Promise<OpenedProvider> {
  return PROVIDERS[settings.key_provider].open(settings, options);
}

/** The part of `settings` that names the configured provider's key. */
export function providerConfig(settings: KeyProviderSettings): ProviderConfig {
  const config: Record<string, unknown> = { key_provider: settings.key_provider };
  for (const field of PROVIDERS[settings.key_provider].settings) config[field] = settings[field];
  return config as ProviderConfig;
}

/** Full provider settings from a ProviderConfig, the PIN taken from this process's environment. */
export function settingsOf(config: ProviderConfig, pkcs11Pin?: string): KeyProviderSettings {
  return {
    master_key_file: '',
    master_passphrase_file: null,
    kms: { key_id: null, region: null, endpoint: null },
    pkcs11: { library: null, slot: null, token_label: null, key_label: null, pin_file: null },
    ...config,
    ...(pkcs11Pin === undefined ? {} : { pkcs11_pin: pkcs11Pin }),
  };
}

function readPin(path: string): string {
  const bytes = readOwnerOnlyFile(path, 'COFFER_PKCS11_PIN_FILE', 256);
  if (bytes === undefined)
    throw new KeyProviderError('COFFER_PKCS11_PIN_FILE', `cannot open ${path} (ENOENT)`);
  return bytes.toString('utf8').replace(/\r?\n$/, '');
}
