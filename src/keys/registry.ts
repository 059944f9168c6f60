import { KMSClient } from '@aws-sdk/client-kms';
import { AwsKmsProvider } from './aws-kms-provider.js';
import type { KeyProvider } from './key-provider.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from './local-provider.js';
import { PassphraseKeyProvider, readPassphraseFile } from './passphrase-provider.js';

export interface KeyProviderSettings {
  readonly key_provider: 'local' | 'aws-kms';
  readonly kms: { readonly key_id: string | null; readonly region: string | null; readonly endpoint: string | null };
  readonly master_key_file: string;
  /** When set, the local master key is derived from this file's passphrase and no key file is used. */
  readonly master_passphrase_file: string | null;
}

export interface OpenedProvider {
  readonly provider: KeyProvider;
  /** One line for the start-up log when opening the provider did something worth saying. */
  readonly notice?: string;
}

/** Key providers by configuration name. A new provider is one file plus one line here. */
const PROVIDERS: Record<KeyProviderSettings['key_provider'], (settings: KeyProviderSettings) => Promise<OpenedProvider>> = {
  'aws-kms': async ({ kms }) => ({
    provider: new AwsKmsProvider(
      new KMSClient({ ...(kms.region === null ? {} : { region: kms.region }), ...(kms.endpoint === null ? {} : { endpoint: kms.endpoint }), maxAttempts: 5 }),
      kms.key_id!,
    ),
  }),
  local: async (settings) => {
    if (settings.master_passphrase_file !== null) {
      return { provider: new PassphraseKeyProvider(readPassphraseFile(settings.master_passphrase_file)) };
    }
    const file = loadOrCreateMasterKey(settings.master_key_file);
    return {
      provider: new LocalKeyProvider(file.key),
      ...(file.created ? { notice: `generated a new local master key at ${settings.master_key_file} (mode 0600); back it up` } : {}),
    };
  },
};

export function openKeyProvider(settings: KeyProviderSettings): Promise<OpenedProvider> {
  return PROVIDERS[settings.key_provider](settings);
}
