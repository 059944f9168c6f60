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
import {
  openKeyProvider,
  type ProviderConfig,
  type ProviderName,
  type ProviderSecrets,
  providerConfig,
  providerNamed,
  settingsOf,
} from '../keys/registry.js';
import type { KeyringHolder, WrappingInfo } from '../store/keyring-store.js';

/** The body of a migrate-key request, as its schema (built from the providers' own) lets it through. */
export type MigrateRequest = { readonly key_provider: ProviderName } & Readonly<
  Record<string, unknown>
>;

export interface MigrateResult {
  readonly from: WrappingInfo;
  readonly to: WrappingInfo;
}

/** The provider settings a request names, checked by the provider's own rules, as start-up checks the configuration's. */
export function targetConfig(request: MigrateRequest, secrets: ProviderSecrets): ProviderConfig {
  const plugin = providerNamed(request.key_provider);
  const stray = Object.keys(request).find(
    (field) => field !== 'key_provider' && !plugin.fields.includes(field),
  );
  if (stray)
    throw invalid(`${stray} does not apply to the ${request.key_provider} provider`, [
      { field: `/${stray}`, in: 'body', message: `does not apply to ${request.key_provider}` },
    ]);
  // In a configuration the key file has a default that a passphrase file overrides; a request names one.
  if (request.master_key_file !== undefined && request.master_passphrase_file !== undefined)
    throw invalid(
      'the local provider takes one of master_key_file and master_passphrase_file, not both',
    );
  const config = request as unknown as ProviderConfig;
  // This server's secrets serve the request where its provider says so (a PIN: when it names no PIN file).
  const settings = settingsOf(config, secrets);
  const problem = plugin.problem(settings);
  if (problem) throw invalid(problem.message);
  return providerConfig(settings);
}

/** Opens the new provider and moves the keyring to it. A provider that cannot be used is a 400 naming why. */
export async function migrateKey(
  keyring: KeyringHolder,
  request: MigrateRequest,
  secrets: ProviderSecrets,
  now: number,
): Promise<MigrateResult> {
  const config = targetConfig(request, secrets);
  const from = keyring.wrapping();
  try {
    const { provider } = await openKeyProvider(settingsOf(config, secrets));
    return { from, to: await keyring.migrate({ provider, config }, now) };
  } catch (err) {
    if (err instanceof KeyProviderError)
      throw invalid(`the new master key cannot be used: ${err.message}`);
    throw err;
  }
}
