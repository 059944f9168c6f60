/**
 * migrate-key: rewrap the keyring under another master key or provider (local → aws-kms, one KMS key to
 * another, → pkcs11, …). One write of one record whatever the number of secrets; see KeyringHolder.migrate
 * for why a crash leaves the store openable by exactly one of the two keys.
 *
 * The request names the new provider with the same settings as the configuration file, secrets excepted:
 * a PIN or passphrase is read by the server from a file the request names (or, for a PIN, from the
 * server's COFFER_PKCS11_PIN), never sent.
 */
import { invalid } from '../errors.js';
import { KeyProviderError } from '../keys/key-provider.js';
import { openKeyProvider, type ProviderConfig, settingsOf } from '../keys/registry.js';
import type { KeyringHolder, WrappingInfo } from '../store/keyring-store.js';

export interface MigrateRequest {
  readonly key_provider: 'local' | 'aws-kms' | 'pkcs11';
  readonly master_key_file?: string;
  readonly master_passphrase_file?: string;
  readonly kms?: { readonly key_id: string; readonly region?: string; readonly endpoint?: string };
  readonly pkcs11?: {
    readonly library: string;
    readonly slot?: number;
    readonly token_label?: string;
    readonly key_label: string;
    readonly pin_file?: string;
  };
}

export interface MigrateResult {
  readonly from: WrappingInfo;
  readonly to: WrappingInfo;
}

const FIELDS_OF: Record<MigrateRequest['key_provider'], readonly string[]> = {
  local: ['master_key_file', 'master_passphrase_file'],
  'aws-kms': ['kms'],
  pkcs11: ['pkcs11'],
};

/** The provider settings a request names, checked as start-up checks the configuration's. */
export function targetConfig(
  request: MigrateRequest,
  pkcs11Pin: string | undefined,
): ProviderConfig {
  const stray = Object.keys(request).find(
    (field) => field !== 'key_provider' && !FIELDS_OF[request.key_provider].includes(field),
  );
  if (stray) throw invalid(`${stray} does not apply to the ${request.key_provider} provider`);
  switch (request.key_provider) {
    case 'local':
      if (
        (request.master_key_file === undefined) ===
        (request.master_passphrase_file === undefined)
      ) {
        throw invalid(
          'the local provider needs exactly one of master_key_file and master_passphrase_file',
        );
      }
      return {
        key_provider: 'local',
        master_key_file: request.master_key_file ?? '',
        master_passphrase_file: request.master_passphrase_file ?? null,
      };
    case 'aws-kms':
      if (!request.kms) throw invalid('the aws-kms provider needs kms.key_id');
      return {
        key_provider: 'aws-kms',
        kms: {
          key_id: request.kms.key_id,
          region: request.kms.region ?? null,
          endpoint: request.kms.endpoint ?? null,
        },
      };
    case 'pkcs11': {
      const p = request.pkcs11;
      if (!p) throw invalid('the pkcs11 provider needs pkcs11.library and pkcs11.key_label');
      if ((p.slot === undefined) === (p.token_label === undefined))
        throw invalid(
          'the pkcs11 provider needs exactly one of pkcs11.slot and pkcs11.token_label',
        );
      if (p.pin_file === undefined && pkcs11Pin === undefined)
        throw invalid(
          'the pkcs11 provider needs pkcs11.pin_file (this server has no COFFER_PKCS11_PIN)',
        );
      return {
        key_provider: 'pkcs11',
        pkcs11: {
          library: p.library,
          slot: p.slot ?? null,
          token_label: p.token_label ?? null,
          key_label: p.key_label,
          pin_file: p.pin_file ?? null,
        },
      };
    }
  }
}

/** Opens the new provider and moves the keyring to it. A provider that cannot be used is a 400 naming why. */
export async function migrateKey(
  keyring: KeyringHolder,
  request: MigrateRequest,
  pkcs11Pin: string | undefined,
  now: number,
): Promise<MigrateResult> {
  const config = targetConfig(request, pkcs11Pin);
  const from = keyring.wrapping();
  try {
    const { provider } = await openKeyProvider(settingsOf(config, pkcs11Pin));
    return { from, to: await keyring.migrate({ provider, config }, now) };
  } catch (err) {
    if (err instanceof KeyProviderError)
      throw invalid(`the new master key cannot be used: ${err.message}`);
    throw err;
  }
}
