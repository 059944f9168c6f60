import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { configDefaults, ENV_SETTINGS } from '../../src/config/schema.js';
import { defaultsFile, settingsTable } from '../../src/config/settings-table.js';
import { READ_ELSEWHERE } from '../../src/config/unknown-env.js';
import { withTable } from '../../src/config/write-settings-docs.js';
import { tempDir } from '../support/harness.js';
import { runCoffer } from '../support/process.js';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

describe('every setting declared once (src/config/settings.ts, the backends, the key providers)', () => {
  it('docs/configuration.md holds the table the declaration makes (npm run docs:settings)', () => {
    const docs = read('docs/configuration.md');
    expect(withTable(docs)).to.equal(docs);
    expect(docs).to.include(settingsTable());
  });

  it('config/default.json holds the declared defaults, and the loader starts from exactly those', () => {
    expect(read('config/default.json')).to.equal(defaultsFile());
    const loaded = loadConfig({}, '/srv/coffer') as unknown as Record<string, unknown>;
    const defaults = configDefaults();
    for (const field of ['host', 'port', 'workers', 'storage', 'postgres', 'keyring', 'roles'])
      expect(loaded[field], field).to.deep.equal(defaults[field]);
    expect(loaded.data_dir).to.equal('/srv/coffer/data');
    expect(loaded.master_key_file).to.equal('/srv/coffer/keys/master.key');
  });

  it("makes every setting declared as a path absolute from where the server starts, a key provider's too", () => {
    const relative = {
      COFFER_DATA_DIR: 'd',
      COFFER_AUDIT_DIR: 'a',
      COFFER_SNAPSHOT_DIR: 's',
      COFFER_SNAPSHOT_EVERY: '1d',
      COFFER_TLS_CERT: 'tls/c.pem',
      COFFER_TLS_KEY: 'tls/k.pem',
      COFFER_KEY_PROVIDER: 'pkcs11',
      COFFER_PKCS11_LIBRARY: 'lib/module.so',
      COFFER_PKCS11_TOKEN_LABEL: 'coffer',
      COFFER_PKCS11_KEY_LABEL: 'main',
      COFFER_PKCS11_PIN_FILE: 'hsm.pin',
    };
    const config = loadConfig(relative, '/srv/coffer');
    expect([
      config.data_dir,
      config.audit.dir,
      config.snapshot.dir,
      config.tls.cert,
      config.tls.key,
      config.pkcs11.library,
      config.pkcs11.pin_file,
    ]).to.deep.equal([
      '/srv/coffer/d',
      '/srv/coffer/a',
      '/srv/coffer/s',
      '/srv/coffer/tls/c.pem',
      '/srv/coffer/tls/k.pem',
      '/srv/coffer/lib/module.so',
      '/srv/coffer/hsm.pin',
    ]);
    // The audit log's default place is in the data directory, wherever that is.
    expect(loadConfig({ COFFER_DATA_DIR: 'd' }, '/srv/coffer').audit.dir).to.equal(
      '/srv/coffer/d/audit',
    );
  });

  it('reads each declared variable into its field, for every kind of value', () => {
    const samples: Record<string, [string, unknown]> = {
      integer: ['90000', 90_000],
      number: ['2.5', 2.5],
      boolean: ['true', true],
      list: ['10.0.0.0/8, 192.168.1.1', ['10.0.0.0/8', '192.168.1.1']],
    };
    for (const setting of ENV_SETTINGS) {
      const sample = samples[setting.kind];
      if (sample === undefined) continue;
      const [text, value] = sample;
      let loaded: unknown;
      try {
        loaded = loadConfig({ [setting.env]: text });
      } catch (err) {
        // A bound or a rule of its own refused the sample: it was read, under its own name.
        expect((err as Error).message, setting.env).to.match(new RegExp(`^${setting.env}`));
        continue;
      }
      const at = setting.field
        .split('.')
        .reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], loaded);
      expect(at, setting.env).to.deep.equal(value);
    }
  });

  it('names every variable once, each documented, and the docs name no variable that does not exist', () => {
    const names = ENV_SETTINGS.map((s) => s.env);
    expect(new Set(names).size).to.equal(names.length);
    for (const s of ENV_SETTINGS) expect(s.description, s.env).to.have.length.above(10);
    // COFFER_PORTT: the misspelling the docs show being warned about.
    const known = new Set([...names, ...READ_ELSEWHERE, 'COFFER_PORTT']);
    for (const file of [
      'README.md',
      'docs/cli.md',
      'docs/clients.md',
      'SECURITY.md',
      'docs/configuration.md',
      'docs/deployment.md',
      'docs/audit.md',
      'docs/key-management.md',
    ]) {
      // A family (`COFFER_PG_*`) ends in `_`.
      const mentioned = (read(file).match(/COFFER_[A-Z0-9_]+/g) ?? []).filter(
        (n) => !n.endsWith('_'),
      );
      for (const name of mentioned)
        if (!name.startsWith('COFFER_TEST_'))
          expect(known.has(name), `${file}: ${name}`).to.equal(true);
    }
  });

  it("keeps the rest of a group's defaults when a file gives part of it", () => {
    const dir = tempDir();
    writeFileSync(
      `${dir}/c.json`,
      JSON.stringify({ audit: { stdout: true }, trusted_proxies: [] }),
    );
    const config = loadConfig({ COFFER_CONFIG: `${dir}/c.json` });
    expect(config.audit.stdout).to.equal(true);
    expect(config.audit.sync_ms).to.equal((configDefaults().audit as { sync_ms: number }).sync_ms);
    expect(() =>
      loadConfig({ COFFER_CONFIG: `${dir}/c.json`, COFFER_AUDIT_STDOUT: 'false' }),
    ).to.not.throw();
    writeFileSync(`${dir}/bad.json`, JSON.stringify({ audit: { stdoutt: true } }));
    expect(() => loadConfig({ COFFER_CONFIG: `${dir}/bad.json` })).to.throw(/unknown setting/);
  });

  it('refuses in a file what may come only from the environment, saying where it may come from', () => {
    const dir = tempDir();
    for (const [field, value, says] of [
      ['root_token', 'x'.repeat(40), /COFFER_ROOT_TOKEN/],
      ['pg_url', 'postgres://u:p@h/db', /COFFER_PG_URL/],
      ['pkcs11_pin', '1234', /COFFER_PKCS11_PIN/],
    ] as const) {
      writeFileSync(`${dir}/c.json`, JSON.stringify({ [field]: value }));
      expect(() => loadConfig({ COFFER_CONFIG: `${dir}/c.json` }), field).to.throw(says);
    }
  });

  it('`coffer help settings` (and `coffer serve --help`) lists every variable', async () => {
    for (const args of [
      ['help', 'settings'],
      ['serve', '--help'],
    ]) {
      const run = await runCoffer(args, {});
      expect(run.code, args.join(' ')).to.equal(0);
      for (const s of ENV_SETTINGS) expect(run.stdout, s.env).to.include(`  ${s.env} (default`);
    }
  });
});
