import { closeSync, lstatSync, openSync, readlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { aeadOpen, aeadSeal, KEY_BYTES, NONCE_BYTES } from '../crypto/aead.js';
import { randomBytes } from '../crypto/random.js';
import { ensureDirectory } from '../directories.js';
import {
  contextBytes,
  type KeyProvider,
  KeyProviderError,
  type WrapContext,
} from './key-provider.js';
import {
  PASSPHRASE_FORMAT,
  PassphraseKeyProvider,
  readPassphraseFile,
} from './passphrase-provider.js';
import type { KeyProviderPlugin } from './plugin.js';
import { readOwnerOnlyFile } from './secret-file.js';

const SETTING = 'COFFER_MASTER_KEY_FILE';
const FORMAT = 1;

/**
 * The `local` provider: a 32-byte master key in a file readable only by its owner. Wrapped data is
 * [format byte][24-byte nonce][XChaCha20-Poly1305 ciphertext], with the wrap context as associated data.
 */
export class LocalKeyProvider implements KeyProvider {
  readonly name = 'local';

  constructor(
    private readonly masterKey: Uint8Array,
    readonly description = 'a local master key file',
  ) {}

  async wrap(plaintext: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    const { nonce, ciphertext } = aeadSeal(this.masterKey, plaintext, contextBytes(context));
    return Buffer.concat([Buffer.from([FORMAT]), nonce, ciphertext]);
  }

  async unwrap(wrapped: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    if (wrapped[0] === PASSPHRASE_FORMAT) {
      throw new KeyProviderError(
        SETTING,
        'the stored keyring is wrapped with a passphrase; set COFFER_MASTER_PASSPHRASE_FILE',
      );
    }
    if (wrapped[0] !== FORMAT || wrapped.length < 1 + NONCE_BYTES) {
      throw new KeyProviderError(
        SETTING,
        'the stored keyring was not wrapped by a local master key',
      );
    }
    try {
      return aeadOpen(
        this.masterKey,
        {
          nonce: wrapped.subarray(1, 1 + NONCE_BYTES),
          ciphertext: wrapped.subarray(1 + NONCE_BYTES),
        },
        contextBytes(context),
      );
    } catch {
      throw new KeyProviderError(
        SETTING,
        'the master key does not open the keyring stored in the data directory (wrong key file?)',
      );
    }
  }
}

/** The configured key file does not exist (and may not be created: the store exists already). */
export class MissingMasterKeyError extends KeyProviderError {}

export interface LocalKeyFile {
  readonly key: Uint8Array;
  readonly created: boolean;
}

/**
 * Reads the master key file, or — only with `create`, for a new store — creates it (32 random bytes, mode
 * 0600) when it does not exist. Refuses a file that is not exactly 32 bytes or that group or others may
 * read or write, and a link that points nowhere.
 */
export function loadOrCreateMasterKey(path: string, create = false): LocalKeyFile {
  const key = readOwnerOnlyFile(path, SETTING, 4096);
  if (key === undefined) {
    const target = danglingLink(path);
    if (target !== undefined)
      throw new KeyProviderError(
        SETTING,
        `${path} is a symbolic link to ${target}, which does not exist`,
      );
    if (!create) throw new MissingMasterKeyError(SETTING, `there is no master key file at ${path}`);
    return { key: createKeyFile(path), created: true };
  }
  if (key.length !== KEY_BYTES) {
    key.fill(0);
    throw new KeyProviderError(
      SETTING,
      `${path} must hold exactly ${KEY_BYTES} bytes, it holds ${key.length}`,
    );
  }
  return { key, created: false };
}

function danglingLink(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : undefined;
  } catch {
    return undefined;
  }
}

function createKeyFile(path: string): Uint8Array {
  ensureDirectory(dirname(path), SETTING);
  const key = randomBytes(KEY_BYTES);
  // 'wx' fails if another process created the file meanwhile: never overwrite a master key.
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, key);
  } finally {
    closeSync(fd);
  }
  return key;
}

/** The `local` provider's settings: a key file, or a passphrase file from which the key is derived. */
export interface LocalSettings {
  readonly master_key_file: string;
  /** When set, the master key is derived from this file's passphrase and no key file is used. */
  readonly master_passphrase_file: string | null;
}

const serverPath = { type: 'string', minLength: 2, maxLength: 4096, pattern: '^/' } as const;

export const localPlugin: KeyProviderPlugin<'local', LocalSettings> = {
  name: 'local',
  summary:
    'a 32-byte key file (mode 0600) on the server, or a passphrase file from which argon2id derives the key',
  fields: ['master_key_file', 'master_passphrase_file'],
  unset: { master_key_file: '', master_passphrase_file: null },
  configSchema: {
    master_key_file: { type: 'string', minLength: 1, default: './keys/master.key' },
    master_passphrase_file: { type: ['string', 'null'], minLength: 1 },
  },
  requestSchema: { master_key_file: serverPath, master_passphrase_file: serverPath },
  paths: ['master_key_file', 'master_passphrase_file'],
  env: [
    {
      env: 'COFFER_MASTER_KEY_FILE',
      field: 'master_key_file',
      kind: 'string',
      meaning: 'the key file; created on the first start of a new store',
    },
    {
      env: 'COFFER_MASTER_PASSPHRASE_FILE',
      field: 'master_passphrase_file',
      kind: 'string',
      meaning: 'instead of a key file: a file holding one passphrase of 12+ characters',
    },
  ],
  example: { key_provider: 'local', master_key_file: '/etc/coffer/new-master.key' },
  problem: (settings) =>
    settings.master_key_file === '' && settings.master_passphrase_file === null
      ? {
          field: 'master_key_file',
          message: 'the local provider needs a key file or a passphrase file',
        }
      : null,
  open: async (settings, { createKey = false }) => {
    if (settings.master_passphrase_file !== null) {
      return {
        provider: new PassphraseKeyProvider(
          readPassphraseFile(settings.master_passphrase_file),
          `local passphrase file ${settings.master_passphrase_file}`,
        ),
      };
    }
    const file = loadOrCreateMasterKey(settings.master_key_file, createKey);
    return {
      provider: new LocalKeyProvider(file.key, `local master key file ${settings.master_key_file}`),
      ...(file.created
        ? {
            notice: `generated a new local master key at ${settings.master_key_file} (mode 0600); back it up`,
          }
        : {}),
    };
  },
};
