/**
 * System packages some tests need (SoftHSM2, rsyslog, Chromium, hvac). The suite's global set-up installs a missing one
 * when it can (Debian's apt-get, as root), saying so in one line; when it cannot, the tests that need it
 * are reported as pending with the reason instead of failing. With COFFER_TEST_REQUIRE_SYSTEM_PACKAGES=1
 * (`.ci/run` sets it) a missing package fails those tests, so CI cannot pass without running them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

interface SystemPackage {
  /** The Debian package. */
  readonly debian: string;
  /** The tests that need it, for the messages. */
  readonly purpose: string;
  readonly installed: () => boolean;
}

export const SOFTHSM_LIBRARIES = [
  '/usr/lib/softhsm/libsofthsm2.so',
  '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so',
  '/usr/local/lib/softhsm/libsofthsm2.so',
];

const PACKAGES = {
  softhsm2: {
    debian: 'softhsm2',
    purpose: 'the pkcs11 provider tests',
    installed: () =>
      commandExists('softhsm2-util') && SOFTHSM_LIBRARIES.some((path) => existsSync(path)),
  },
  rsyslog: {
    debian: 'rsyslog rsyslog-gnutls',
    purpose: 'the audit stream tests (syslog over TCP and TLS)',
    installed: () => existsSync(RSYSLOGD) && existsSync(RSYSLOG_GTLS),
  },
  chromium: {
    debian: 'chromium',
    purpose: 'the web console browser tests',
    installed: () => existsSync(CHROMIUM),
  },
  hvac: {
    debian: 'python3-hvac',
    purpose: "the Vault compatibility tests (hvac, Vault's Python client)",
    installed: () => existsSync(DEBIAN_PYTHON) && existsSync(HVAC),
  },
} satisfies Record<string, SystemPackage>;

/** Debian's rsyslog daemon, and its GnuTLS network stream driver (package rsyslog-gnutls). */
export const RSYSLOGD = '/usr/sbin/rsyslogd';
const RSYSLOG_GTLS = '/usr/lib/x86_64-linux-gnu/rsyslog/lmnsd_gtls.so';

/** Debian's Python, which Debian's hvac is installed for (not a python3 another install put first on PATH). */
export const DEBIAN_PYTHON = '/usr/bin/python3';
const HVAC = '/usr/lib/python3/dist-packages/hvac/__init__.py';

/** Debian's Chromium, driven by playwright-core (never a browser download). */
export const CHROMIUM = '/usr/bin/chromium';

export type PackageName = keyof typeof PACKAGES;

/** Why each package is missing, once `ensureSystemPackages` has looked. */
const missing = new Map<PackageName, string>();
const announced = new Set<PackageName>();

function commandExists(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function aptInstall(debian: string): void {
  const run = (args: string[]) =>
    execFileSync('apt-get', args, {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 600_000,
    });
  try {
    run(['install', '-y', '-q', ...debian.split(' ')]);
  } catch {
    // The package lists may be missing or stale on a fresh machine.
    run(['update', '-q']);
    run(['install', '-y', '-q', ...debian.split(' ')]);
  }
}

/** Installs what is missing and can be installed; remembers why the rest is missing. */
export function ensureSystemPackages(): void {
  // COFFER_TEST_WITHOUT=softhsm2 runs the suite as a machine without the package would (test/suite-setup.test.ts).
  const without = new Set((process.env.COFFER_TEST_WITHOUT ?? '').split(',').filter(Boolean));
  for (const [name, pkg] of Object.entries(PACKAGES) as [PackageName, SystemPackage][]) {
    if (without.has(name)) {
      missing.set(name, `Debian package ${pkg.debian} is treated as missing (COFFER_TEST_WITHOUT)`);
      continue;
    }
    if (pkg.installed()) continue;
    if (process.getuid?.() !== 0 || !commandExists('apt-get')) {
      missing.set(
        name,
        `Debian package ${pkg.debian} is not installed and this user cannot install it (needs root and apt-get)`,
      );
      continue;
    }
    console.log(`  installing ${pkg.debian} (Debian package) for ${pkg.purpose}…`);
    try {
      aptInstall(pkg.debian);
    } catch (err) {
      missing.set(
        name,
        `Debian package ${pkg.debian} is not installed and apt-get could not install it (${(err as Error).message.split('\n')[0]})`,
      );
      continue;
    }
    if (!pkg.installed())
      missing.set(
        name,
        `Debian package ${pkg.debian} was installed but its files are not where the tests look`,
      );
  }
}

/**
 * Call from a `before` hook (`function () {…}`, not an arrow): marks the suite pending, with the reason in
 * its title, when `name` is missing, or fails it when CI requires every system package.
 */
export function requirePackage(context: Mocha.Context, name: PackageName): void {
  const reason =
    missing.get(name) ??
    (PACKAGES[name].installed()
      ? undefined
      : `Debian package ${PACKAGES[name].debian} is not installed`);
  if (reason === undefined) return;
  if (process.env.COFFER_TEST_REQUIRE_SYSTEM_PACKAGES === '1')
    throw new Error(`${reason}; COFFER_TEST_REQUIRE_SYSTEM_PACKAGES=1 requires it`);
  if (!announced.has(name)) console.log(`  pending, ${PACKAGES[name].purpose}: ${reason}`);
  announced.add(name);
  const suite = context.test?.parent;
  if (suite) suite.title += ` [pending: ${reason}]`;
  context.skip();
}
