/**
 * The `pkcs11` key provider as Coffer configures it: its settings (the PIN from the environment or a file,
 * never a configuration file), their rules, and opening it (pkcs11-provider.ts).
 */
import { KeyProviderError } from './key-provider.js';
import { Pkcs11KeyProvider } from './pkcs11-provider.js';
import type { KeyProviderPlugin } from './plugin.js';
import { readOwnerOnlyFile } from './secret-file.js';

/** The `pkcs11` provider's settings as configured (nulls where unset); the PIN never from a config file. */
export interface Pkcs11ProviderSettings {
  readonly pkcs11: {
    readonly library: string | null;
    readonly slot: number | null;
    readonly token_label: string | null;
    readonly key_label: string | null;
    readonly pin_file: string | null;
  };
  /** From COFFER_PKCS11_PIN only, when no pin_file names a file. */
  readonly pkcs11_pin?: string;
}

const serverPath = { type: 'string', minLength: 2, maxLength: 4096, pattern: '^/' } as const;

export const pkcs11Plugin: KeyProviderPlugin<'pkcs11', Pkcs11ProviderSettings> = {
  name: 'pkcs11',
  summary:
    'an AES key inside a PKCS#11 HSM (non-extractable, sensitive); the HSM wraps and unwraps, the key never leaves it',
  fields: ['pkcs11'],
  unset: {
    pkcs11: { library: null, slot: null, token_label: null, key_label: null, pin_file: null },
  },
  configSchema: {
    pkcs11: {
      type: 'object',
      additionalProperties: false,
      required: ['library', 'slot', 'token_label', 'key_label', 'pin_file'],
      properties: {
        library: { type: ['string', 'null'], minLength: 1 },
        slot: { type: ['integer', 'null'], minimum: 0 },
        token_label: { type: ['string', 'null'], minLength: 1, maxLength: 32 },
        key_label: { type: ['string', 'null'], minLength: 1 },
        pin_file: { type: ['string', 'null'], minLength: 1 },
      },
    },
    pkcs11_pin: {
      type: 'string',
      minLength: 1,
      envOnly: 'the PKCS#11 PIN may only come from COFFER_PKCS11_PIN or pkcs11.pin_file',
    },
  },
  requestSchema: {
    pkcs11: {
      type: 'object',
      additionalProperties: false,
      required: ['library', 'key_label'],
      properties: {
        library: serverPath,
        slot: { type: 'integer', minimum: 0 },
        token_label: { type: 'string', minLength: 1, maxLength: 32 },
        key_label: { type: 'string', minLength: 1, maxLength: 256 },
        pin_file: serverPath,
      },
    },
  },
  paths: ['pkcs11.library', 'pkcs11.pin_file'],
  // This process's COFFER_PKCS11_PIN serves a key that names no PIN file.
  secrets: { fields: ['pkcs11_pin'], serves: ({ pkcs11 }) => pkcs11.pin_file === null },
  env: [
    {
      env: 'COFFER_PKCS11_LIBRARY',
      field: 'pkcs11.library',
      kind: 'string',
      meaning: "the vendor's PKCS#11 module (.so)",
    },
    {
      env: 'COFFER_PKCS11_SLOT',
      field: 'pkcs11.slot',
      kind: 'integer',
      meaning: 'the slot id (or a token label: one of the two)',
    },
    {
      env: 'COFFER_PKCS11_TOKEN_LABEL',
      field: 'pkcs11.token_label',
      kind: 'string',
      meaning: 'the token label (or a slot id)',
    },
    {
      env: 'COFFER_PKCS11_KEY_LABEL',
      field: 'pkcs11.key_label',
      kind: 'string',
      meaning: "the AES key's CKA_LABEL",
    },
    {
      env: 'COFFER_PKCS11_PIN_FILE',
      field: 'pkcs11.pin_file',
      kind: 'string',
      meaning: 'a file (mode 0600) holding the user PIN (or the PIN itself: one of the two)',
    },
    {
      env: 'COFFER_PKCS11_PIN',
      field: 'pkcs11_pin',
      kind: 'string',
      meaning: 'the user PIN (from the environment only, never a config file)',
    },
  ],
  example: {
    key_provider: 'pkcs11',
    pkcs11: {
      library: '/usr/lib/softhsm/libsofthsm2.so',
      token_label: 'coffer',
      key_label: 'coffer-master',
      pin_file: '/etc/coffer/hsm.pin',
    },
  },
  problem: ({ pkcs11, pkcs11_pin }) => {
    if (pkcs11.library === null)
      return {
        field: 'pkcs11.library',
        message: 'the pkcs11 provider needs the path of the PKCS#11 module (pkcs11.library)',
      };
    if ((pkcs11.slot === null) === (pkcs11.token_label === null))
      return {
        field: 'pkcs11.token_label',
        message:
          'the pkcs11 provider needs exactly one of a slot id (pkcs11.slot) and a token label (pkcs11.token_label)',
      };
    if (pkcs11.key_label === null)
      return {
        field: 'pkcs11.key_label',
        message: 'the pkcs11 provider needs the label of its AES key (pkcs11.key_label)',
      };
    if ((pkcs11.pin_file === null) === (pkcs11_pin === undefined))
      return {
        field: 'pkcs11.pin_file',
        message:
          'the pkcs11 provider needs exactly one of a PIN file (pkcs11.pin_file) and COFFER_PKCS11_PIN',
      };
    return null;
  },
  open: async ({ pkcs11, pkcs11_pin }) =>
    Pkcs11KeyProvider.open(
      {
        library: pkcs11.library!,
        slot: pkcs11.slot,
        token_label: pkcs11.token_label,
        key_label: pkcs11.key_label!,
      },
      pkcs11.pin_file === null ? pkcs11_pin! : readPin(pkcs11.pin_file),
    ),
};

function readPin(path: string): string {
  const bytes = readOwnerOnlyFile(path, 'COFFER_PKCS11_PIN_FILE', 256);
  if (bytes === undefined)
    throw new KeyProviderError('COFFER_PKCS11_PIN_FILE', `cannot open ${path} (ENOENT)`);
  return bytes.toString('utf8').replace(/\r?\n$/, '');
}
