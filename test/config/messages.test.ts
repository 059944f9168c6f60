import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { tempDir } from '../support/harness.js';

/** The one line start-up prints for a bad setting. */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('configuration messages say what is wrong and what is allowed', () => {
  it('a negative number is called negative, not "not a whole number"', () => {
    expect(refusal({ COFFER_MAX_TTL: '-1' })).to.equal('COFFER_MAX_TTL: must be 0 or more, got -1');
    expect(refusal({ COFFER_AUTH_FAILURE_RATE: '-2' })).to.equal(
      'COFFER_AUTH_FAILURE_RATE: must be more than 0, got -2',
    );
  });

  it("a public address is a scheme and a host, and the metrics port is not the API's", () => {
    expect(refusal({ COFFER_PUBLIC_URL: 'https://coffer.example.com/vault' })).to.equal(
      'COFFER_PUBLIC_URL: must be a scheme and a host, and a port (1 to 65535) if any, such as https://coffer.example.com or http://10.0.0.5:8750 (no path, no user or password)',
    );
    for (const port of ['0', '65536', '99999'])
      expect(refusal({ COFFER_PUBLIC_URL: `https://coffer.example.com:${port}` })).to.match(
        /^COFFER_PUBLIC_URL: must be/,
      );
    // A URL carrying a password is refused without being repeated.
    expect(
      refusal({ COFFER_PUBLIC_URL: 'https://admin:hunter2@coffer.example.com' }),
    ).to.not.include('hunter2');
    expect(refusal({ COFFER_PUBLIC_URL: 'coffer.example.com' })).to.match(
      /^COFFER_PUBLIC_URL: must be/,
    );
    for (const ok of [
      'https://coffer.example.com',
      'http://10.0.0.5:8750/',
      'https://[::1]:8750',
      'https://coffer.example.com:65535',
    ])
      expect(loadConfig({ COFFER_PUBLIC_URL: ok }).public_url).to.equal(ok);
    expect(refusal({ COFFER_PORT: '9000', COFFER_METRICS_PORT: '9000' })).to.equal(
      "COFFER_METRICS_PORT: must differ from the API's port (9000): the metrics get an address of their own",
    );
  });

  it('an enum setting lists the allowed values', () => {
    expect(refusal({ COFFER_LOG_LEVEL: 'loud' })).to.equal(
      'COFFER_LOG_LEVEL: invalid value (must be one of: fatal, error, warn, info, debug, silent)',
    );
    expect(refusal({ COFFER_KEY_PROVIDER: 'vault' })).to.equal(
      'COFFER_KEY_PROVIDER: invalid value (must be one of: local, aws-kms, pkcs11)',
    );
  });

  it('malformed JSON in COFFER_CONFIG says so, apart from JSON that is not an object', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.json'), '{"port": 8750,');
    expect(refusal({ COFFER_CONFIG: join(dir, 'bad.json') })).to.match(
      /^COFFER_CONFIG: .*bad\.json is not valid JSON \(it ends before its JSON does\)$/,
    );
    // Where, never what: V8's own message quotes the text around the fault, here a secret.
    for (const text of [
      '{"pg_url": "postgres://coffer:Hunter2-Secret@db/coffer" x}',
      '{"root_token": "Hunter2-Secret-0123456789abcdefghijklmn"\n,}',
      'root_token: Hunter2-Secret',
    ]) {
      writeFileSync(join(dir, 'secret.json'), text);
      const said = refusal({ COFFER_CONFIG: join(dir, 'secret.json') });
      expect(said).to.match(/^COFFER_CONFIG: .*secret\.json is not valid JSON/);
      expect(said).to.not.include('Hunter2');
    }
    for (const short of ['{"port": 8750', '']) {
      writeFileSync(join(dir, 'short.json'), short);
      expect(refusal({ COFFER_CONFIG: join(dir, 'short.json') })).to.match(
        /is not valid JSON \(it ends before its JSON does\)$/,
      );
    }
    writeFileSync(join(dir, 'secret.json'), '{"port": 8750,\n  "log_level" "info"}');
    expect(refusal({ COFFER_CONFIG: join(dir, 'secret.json') })).to.match(
      /is not valid JSON \(line 2, column 15\)$/,
    );
    writeFileSync(join(dir, 'list.json'), '[1]');
    expect(refusal({ COFFER_CONFIG: join(dir, 'list.json') })).to.match(
      /^COFFER_CONFIG: .*list\.json holds JSON but not an object/,
    );
  });
});
