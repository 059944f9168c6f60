import argon2 from 'argon2';
import { aeadOpen, aeadSeal, KEY_BYTES, NONCE_BYTES } from '../crypto/aead.js';
import { randomBytes } from '../crypto/random.js';
import {
  contextBytes,
  type KeyProvider,
  KeyProviderError,
  type WrapContext,
} from './key-provider.js';
import { readOwnerOnlyFile } from './secret-file.js';

const SETTING = 'COFFER_MASTER_PASSPHRASE_FILE';
/** Wrapped-data format of this provider; the key-file form of `local` writes format 1. */
export const PASSPHRASE_FORMAT = 2;
const SALT_BYTES = 16;
/** argon2id parameters for deriving the master key; stored in every wrapped blob, so they can change later. */
const PARAMS = { memoryCost: 65536, timeCost: 3, parallelism: 4 } as const;

/**
 * The passphrase form of the `local` provider: the master key is derived from a passphrase with argon2id
 * and a random salt. Wrapped data is
 *   [2][salt 16][m u32][t u8][p u8][nonce 24][XChaCha20-Poly1305 ciphertext]
 * with the wrap context as associated data, so the salt and parameters travel with the keyring.
 */
export class PassphraseKeyProvider implements KeyProvider {
  readonly name = 'local';

  constructor(
    private readonly passphrase: string,
    readonly description = 'a local passphrase',
  ) {}

  async wrap(plaintext: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    const salt = randomBytes(SALT_BYTES);
    const key = await this.derive(salt, PARAMS.memoryCost, PARAMS.timeCost, PARAMS.parallelism);
    const { nonce, ciphertext } = aeadSeal(key, plaintext, contextBytes(context));
    key.fill(0);
    const header = Buffer.alloc(1 + SALT_BYTES + 6);
    header[0] = PASSPHRASE_FORMAT;
    salt.copy(header, 1);
    header.writeUInt32BE(PARAMS.memoryCost, 1 + SALT_BYTES);
    header[1 + SALT_BYTES + 4] = PARAMS.timeCost;
    header[1 + SALT_BYTES + 5] = PARAMS.parallelism;
    return Buffer.concat([header, nonce, ciphertext]);
  }

  async unwrap(wrapped: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    const bytes = Buffer.from(wrapped);
    const headerLength = 1 + SALT_BYTES + 6;
    if (bytes[0] !== PASSPHRASE_FORMAT || bytes.length < headerLength + NONCE_BYTES) {
      throw new KeyProviderError(
        SETTING,
        'the stored keyring is wrapped by a master key file, not a passphrase: unset COFFER_MASTER_PASSPHRASE_FILE (and master_passphrase_file in COFFER_CONFIG) so that the key file of COFFER_MASTER_KEY_FILE is used',
      );
    }
    const salt = bytes.subarray(1, 1 + SALT_BYTES);
    const key = await this.derive(
      salt,
      bytes.readUInt32BE(1 + SALT_BYTES),
      bytes[1 + SALT_BYTES + 4]!,
      bytes[1 + SALT_BYTES + 5]!,
    );
    try {
      return aeadOpen(
        key,
        {
          nonce: bytes.subarray(headerLength, headerLength + NONCE_BYTES),
          ciphertext: bytes.subarray(headerLength + NONCE_BYTES),
        },
        contextBytes(context),
      );
    } catch {
      throw new KeyProviderError(
        SETTING,
        'the passphrase does not open the keyring stored in the data directory (wrong passphrase?)',
      );
    } finally {
      key.fill(0);
    }
  }

  private async derive(
    salt: Uint8Array,
    memoryCost: number,
    timeCost: number,
    parallelism: number,
  ): Promise<Buffer> {
    return argon2.hash(this.passphrase, {
      type: argon2.argon2id,
      raw: true,
      salt: Buffer.from(salt),
      hashLength: KEY_BYTES,
      memoryCost,
      timeCost,
      parallelism,
    });
  }
}

/** Reads the passphrase file: owner-only permissions, one passphrase of at least 12 characters. */
export function readPassphraseFile(path: string): string {
  const bytes = readOwnerOnlyFile(path, SETTING, 4096);
  if (bytes === undefined) throw new KeyProviderError(SETTING, `cannot open ${path} (ENOENT)`);
  const passphrase = bytes.toString('utf8').replace(/\r?\n$/, '');
  if (passphrase.length < 12)
    throw new KeyProviderError(SETTING, `${path} must hold a passphrase of at least 12 characters`);
  return passphrase;
}
