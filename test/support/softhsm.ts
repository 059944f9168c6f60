/**
 * A real SoftHSM2 token for the tests: one configuration and token directory per test run, made before
 * anything in this process loads the module (SoftHSM reads SOFTHSM2_CONF once, at C_Initialize). The
 * token holds AES keys generated inside it, as an operator would with pkcs11-tool.
 *
 * SoftHSM2 is Debian's package `softhsm2`; the suite's global set-up installs it when missing and it can
 * (test/support/system-packages.ts), else the suites that need it are pending.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pkcs11js from 'pkcs11js';
import { pkcs11Module } from '../../src/keys/pkcs11-provider.js';
import { requirePackage, SOFTHSM_LIBRARIES } from './system-packages.js';
import { tempDir } from './temp-dirs.js';

export interface SoftHsm {
  readonly library: string;
  readonly conf: string;
  readonly tokenLabel: string;
  /** The token's user PIN, a test-only value. */
  readonly pin: string;
  /** The token's slot id (SoftHSM assigns it when the token is initialised). */
  readonly slot: number;
  /** Environment for a Coffer using `keyLabel` on this token, PIN from the environment. */
  env(keyLabel: string): Record<string, string>;
}

/** Labels of the keys the token holds: two ordinary AES-256 keys and one the HSM would let out. */
export const HSM_KEYS = {
  main: 'coffer-master',
  other: 'coffer-other',
  extractable: 'coffer-extractable',
} as const;

let instance: SoftHsm | undefined;

/** The test token; call from a `before` hook's `function`, which becomes pending when SoftHSM2 is missing. */
export function softHsm(context: Mocha.Context): SoftHsm {
  if (instance) return instance;
  requirePackage(context, 'softhsm2');
  const library = SOFTHSM_LIBRARIES.find((path) => existsSync(path))!;
  const dir = tempDir('coffer-softhsm-');
  const conf = join(dir, 'softhsm2.conf');
  writeFileSync(
    conf,
    `directories.tokendir = ${dir}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  process.env.SOFTHSM2_CONF = conf;
  const tokenLabel = 'coffer-test';
  const pin = 'test-only-pin-1234';
  execFileSync(
    'softhsm2-util',
    ['--init-token', '--free', '--label', tokenLabel, '--pin', pin, '--so-pin', 'test-only-so-pin'],
    { stdio: 'ignore' },
  );
  const slot = generateKeys(library, tokenLabel, pin);
  instance = {
    library,
    conf,
    tokenLabel,
    pin,
    slot,
    env: (keyLabel) => ({
      SOFTHSM2_CONF: conf,
      COFFER_KEY_PROVIDER: 'pkcs11',
      COFFER_PKCS11_LIBRARY: library,
      COFFER_PKCS11_TOKEN_LABEL: tokenLabel,
      COFFER_PKCS11_KEY_LABEL: keyLabel,
      COFFER_PKCS11_PIN: pin,
    }),
  };
  return instance;
}

/** Generates the keys of HSM_KEYS in the token and returns the token's slot id. */
function generateKeys(library: string, tokenLabel: string, pin: string): number {
  const module = pkcs11Module(library);
  const slot = module
    .C_GetSlotList(true)
    .find((handle) => module.C_GetTokenInfo(handle).label.trimEnd() === tokenLabel)!;
  const session = module.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  try {
    module.C_Login(session, pkcs11js.CKU_USER, pin);
    for (const [label, extractable] of [
      [HSM_KEYS.main, false],
      [HSM_KEYS.other, false],
      [HSM_KEYS.extractable, true],
    ] as const) {
      module.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
        { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
        { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
        { type: pkcs11js.CKA_LABEL, value: label },
        { type: pkcs11js.CKA_TOKEN, value: true },
        { type: pkcs11js.CKA_PRIVATE, value: true },
        { type: pkcs11js.CKA_SENSITIVE, value: !extractable },
        { type: pkcs11js.CKA_EXTRACTABLE, value: extractable },
        { type: pkcs11js.CKA_ENCRYPT, value: true },
        { type: pkcs11js.CKA_DECRYPT, value: true },
      ]);
    }
    module.C_Logout(session);
    return Number(slot.readBigUInt64LE());
  } finally {
    module.C_CloseSession(session);
  }
}
