/**
 * The master key providers, by configuration name. Adding one is one file exporting a KeyProviderPlugin
 * (keys/plugin.ts) and one entry in KEY_PROVIDERS below: the settings type, the configuration schema and
 * its environment variables, the migrate-key request schema, the start-up and migration checks, the CLI's
 * help and the docs table all come from this list.
 */
import { awsKmsPlugin } from './aws-kms-provider.js';
import { localPlugin } from './local-provider.js';
import { pkcs11Plugin } from './pkcs11-plugin.js';
import type {
  KeyProviderPlugin,
  OpenedProvider,
  OpenOptions,
  ProviderEnv,
  SettingsProblem,
} from './plugin.js';

export type { OpenedProvider, OpenOptions } from './plugin.js';

export const KEY_PROVIDERS = [localPlugin, awsKmsPlugin, pkcs11Plugin] as const;

export type ProviderName = (typeof KEY_PROVIDERS)[number]['name'];
export const PROVIDER_NAMES = KEY_PROVIDERS.map((p) => p.name) as ProviderName[];

type SettingsOf<P> = P extends KeyProviderPlugin<string, infer S> ? S : never;
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

/** Every provider's settings, as the configuration holds them (each provider reads its own). */
export type KeyProviderSettings = { readonly key_provider: ProviderName } & Intersection<
  SettingsOf<(typeof KEY_PROVIDERS)[number]>
>;

/**
 * The settings of one provider alone, without secrets (a PIN comes from the environment or a file it
 * names): what the store records next to the keyring it wraps, so that every process can follow a
 * migration and start-up can say which key opens the store.
 */
export type ProviderConfig = Pick<KeyProviderSettings, 'key_provider'> &
  Partial<Omit<KeyProviderSettings, 'key_provider' | 'pkcs11_pin'>>;

/** Settings with no provider's fields set: the nulls each provider's `problem` reads as "not given". */
const UNSET: Readonly<Record<string, unknown>> = Object.assign(
  {},
  ...KEY_PROVIDERS.map((p) => p.unset),
);

export function providerNamed(
  name: ProviderName,
): KeyProviderPlugin<ProviderName, KeyProviderSettings> {
  const plugin = KEY_PROVIDERS.find((p) => p.name === name);
  if (!plugin) throw new Error(`no key provider named ${name}`);
  return plugin as unknown as KeyProviderPlugin<ProviderName, KeyProviderSettings>;
}

export function openKeyProvider(
  settings: KeyProviderSettings,
  options: OpenOptions = {},
): Promise<OpenedProvider> {
  return providerNamed(settings.key_provider).open(settings, options);
}

/** The first rule the configured provider's settings break, or null (the provider's own check). */
export function providerProblem(settings: KeyProviderSettings): SettingsProblem | null {
  return providerNamed(settings.key_provider).problem(settings);
}

/** The part of `settings` that names the configured provider's key. */
export function providerConfig(settings: KeyProviderSettings): ProviderConfig {
  const config: Record<string, unknown> = { key_provider: settings.key_provider };
  for (const field of providerNamed(settings.key_provider).fields)
    config[field] = settings[field as keyof KeyProviderSettings];
  return config as ProviderConfig;
}

/** The secret settings of this process (each provider's `secrets`, from the environment), where set. */
export type ProviderSecrets = Readonly<Record<string, unknown>>;

export function secretsOf(settings: object): ProviderSecrets {
  const set = settings as Readonly<Record<string, unknown>>;
  const fields = KEY_PROVIDERS.flatMap((p) => (p.secrets ? p.secrets.fields : []));
  return Object.fromEntries(fields.filter((f) => set[f] !== undefined).map((f) => [f, set[f]]));
}

/**
 * Full provider settings from a ProviderConfig, with this process's secrets where its provider says they
 * serve it.
 */
export function settingsOf(
  config: ProviderConfig,
  secrets: ProviderSecrets = {},
): KeyProviderSettings {
  const settings: Record<string, unknown> = { ...UNSET, ...config };
  // A settings object given in part (a migrate-key request) has its other fields unset.
  for (const [field, unset] of Object.entries(UNSET)) {
    const given = (config as Record<string, unknown>)[field];
    if (typeof unset === 'object' && typeof given === 'object' && given !== null)
      settings[field] = { ...unset, ...given };
  }
  const full = settings as unknown as KeyProviderSettings;
  const declared = providerNamed(config.key_provider).secrets;
  if (declared && (declared.serves?.(full) ?? true))
    for (const field of declared.fields)
      if (secrets[field] !== undefined) settings[field] = secrets[field];
  return full;
}

/** Every provider's environment variables. */
export function providerEnv(): ProviderEnv[] {
  return KEY_PROVIDERS.flatMap((p) => p.env);
}

/** The configuration schema's properties for the providers' fields. */
export function providerConfigProperties(): Record<string, object> {
  return Object.assign({}, ...KEY_PROVIDERS.map((p) => p.configSchema));
}

/** The migrate-key request schema's properties for the providers' fields. */
export function providerRequestProperties(): Record<string, object> {
  return Object.assign({}, ...KEY_PROVIDERS.map((p) => p.requestSchema));
}

/** The providers as a markdown table (docs/key-management.md holds exactly this; a test checks it). */
export function providerTable(): string {
  const rows = KEY_PROVIDERS.map(
    (p) =>
      `| \`${p.name}\` | ${p.summary} | ${p.env.map((e) => `\`${e.env}\`: ${e.meaning}`).join('<br>')} |`,
  );
  return ['| provider | what holds the master key | settings |', '|---|---|---|', ...rows].join(
    '\n',
  );
}
