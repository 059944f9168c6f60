import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { migrateSchema } from '../../src/api/migrate-schema.js';
import { ENV_SETTINGS } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';
import {
  KEY_PROVIDERS,
  type KeyProviderSettings,
  providerTable,
  settingsOf,
} from '../../src/keys/registry.js';

const DOC = fileURLToPath(new URL('../../../docs/key-management.md', import.meta.url));

describe('the key provider registry: providers describe themselves, everything else is built from the list', () => {
  it('gives the configuration schema, the environment variables and the migrate-key schema every provider field', () => {
    for (const p of KEY_PROVIDERS) {
      for (const field of p.fields) {
        expect(configSchema.properties, `${p.name} ${field}`).to.have.property(field);
        expect(configSchema.required, `${p.name} ${field}`).to.include(field);
        expect(migrateSchema.properties, `${p.name} ${field}`).to.have.property(field);
      }
      for (const e of p.env)
        expect(
          ENV_SETTINGS.map((s) => s.env),
          p.name,
        ).to.include(e.env);
    }
    expect(configSchema.properties.key_provider.enum).to.deep.equal(
      KEY_PROVIDERS.map((p) => p.name),
    );
    expect(migrateSchema.properties.key_provider.enum).to.deep.equal(
      KEY_PROVIDERS.map((p) => p.name),
    );
  });

  it('builds the settings type and the unset settings from the list', () => {
    const settings: KeyProviderSettings = settingsOf({ key_provider: 'local' });
    // Typed per provider field (a compile-time check as much as a runtime one).
    const keyId: string | null = settings.kms.key_id;
    const slot: number | null = settings.pkcs11.slot;
    expect([keyId, slot, settings.master_passphrase_file]).to.deep.equal([null, null, null]);
    expect(Object.keys(settings).sort()).to.deep.equal(
      ['key_provider', ...KEY_PROVIDERS.flatMap((p) => p.fields)].sort(),
    );
  });

  it('keeps docs/key-management.md holding exactly the generated provider table', () => {
    expect(readFileSync(DOC, 'utf8')).to.include(providerTable());
  });

  it('writes each rule once: the pkcs11 "slot or token label" rule refuses both and neither, and takes either', () => {
    const pkcs11 = KEY_PROVIDERS.find((p) => p.name === 'pkcs11')!;
    const base = { library: '/lib/x.so', key_label: 'k', pin_file: '/etc/pin' };
    const check = (token: object) =>
      pkcs11.problem(
        settingsOf({ key_provider: 'pkcs11', pkcs11: { ...base, ...token } as never }),
      );
    expect(check({ slot: 0, token_label: 'coffer' })?.field).to.equal('pkcs11.token_label');
    expect(check({})?.field).to.equal('pkcs11.token_label');
    expect(check({ slot: 0 })).to.equal(null);
    expect(check({ token_label: 'coffer' })).to.equal(null);
  });
});
