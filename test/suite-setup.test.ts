import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const dist = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const MOCHA = fileURLToPath(new URL('../../node_modules/mocha/bin/mocha.js', import.meta.url));

/** Runs mocha on `specs` with the suite's global set-up, in its own TMPDIR; returns its JSON results. */
function runMocha(
  specs: string[],
  env: Record<string, string>,
  options: readonly string[] = [],
): {
  stats: { passes: number; failures: number; pending: number };
  pending: { fullTitle: string }[];
  failures: { err: { message: string } }[];
  tmp: string[];
} {
  const tmp = mkdtempSync(join(tmpdir(), 'coffer-suite-setup-'));
  try {
    const run = spawnSync(
      process.execPath,
      [
        MOCHA,
        '--no-config',
        '--exit',
        '--timeout',
        '20000',
        '--require',
        dist('./support/global-setup.js'),
        '--reporter',
        'json',
        ...options,
        ...specs,
      ],
      {
        // Not inherited: .ci/run sets COFFER_TEST_REQUIRE_SYSTEM_PACKAGES for the suite itself.
        env: { ...process.env, TMPDIR: tmp, COFFER_TEST_REQUIRE_SYSTEM_PACKAGES: '', ...env },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    const json = run.stdout.slice(run.stdout.indexOf('{\n'));
    return { ...JSON.parse(json), tmp: readdirSync(tmp) };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

describe('the test suite itself', function () {
  this.timeout(180_000);

  it('leaves no temporary directory behind, even when a test fails with its server still running', () => {
    const result = runMocha([dist('./fixtures/failing-suite.js')], {});
    expect(result.stats.failures).to.equal(1);
    expect(result.tmp).to.deep.equal([]);
  });

  it('leaves no temporary directory behind in parallel mode, where each worker makes its own (as npm test runs)', () => {
    const result = runMocha(
      [dist('./fixtures/failing-suite.js'), dist('./fixtures/temp-dirs-suite.js')],
      {},
      ['--parallel', '--jobs', '2'],
    );
    expect([result.stats.passes, result.stats.failures]).to.deep.equal([1, 1]);
    expect(result.tmp).to.deep.equal([]);
  });

  it('reports the pkcs11 tests as pending with the reason when SoftHSM2 is missing, and fails them when CI requires it', () => {
    const spec = dist('./keys/pkcs11.test.js');
    const pending = runMocha([spec], { COFFER_TEST_WITHOUT: 'softhsm2' });
    expect(pending.stats.failures).to.equal(0);
    expect(pending.stats.passes).to.equal(0);
    expect(pending.stats.pending).to.be.greaterThan(0);
    expect(pending.pending[0]!.fullTitle).to.match(
      /pending: Debian package softhsm2 is treated as missing/,
    );
    const required = runMocha([spec], {
      COFFER_TEST_WITHOUT: 'softhsm2',
      COFFER_TEST_REQUIRE_SYSTEM_PACKAGES: '1',
    });
    expect(required.stats.failures).to.be.greaterThan(0);
    expect(required.failures[0]!.err.message).to.match(
      /softhsm2 .*COFFER_TEST_REQUIRE_SYSTEM_PACKAGES=1 requires it/,
    );
  });
});
