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
import { PASSPHRASE_FORMAT } from './passphrase-provider.js';
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
