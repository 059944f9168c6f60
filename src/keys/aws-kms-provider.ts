import type { KMSClient } from '@aws-sdk/client-kms';
import { aeadOpen, aeadSeal, KEY_BYTES, NONCE_BYTES } from '../crypto/aead.js';
import {
  contextBytes,
  type KeyProvider,
  KeyProviderError,
  type WrapContext,
} from './key-provider.js';
import type { KeyProviderPlugin } from './plugin.js';

const SETTING = 'COFFER_KMS_KEY_ID';
const FORMAT = 3;

/**
 * The `aws-kms` provider: the keyring is sealed (XChaCha20-Poly1305) under a data key from AWS KMS
 * GenerateDataKey; only the KMS-encrypted data key is stored with it. Both calls carry the wrap context
 * (purpose, this store's instance id) as the KMS encryption context, so KMS itself refuses to decrypt the
 * data key for anything else. One KMS call at start-up (Decrypt); none per request.
 *
 * Wrapped data: [3][blob length u16][KMS ciphertext blob][nonce 24][ciphertext].
 */
type KmsSdk = typeof import('@aws-sdk/client-kms');

export class AwsKmsProvider implements KeyProvider {
  readonly name = 'aws-kms';

  readonly description: string;

  constructor(
    /** The AWS SDK's KMS module, loaded when a provider is opened (it costs every process ~130 ms to load). */
    private readonly sdk: KmsSdk,
    private readonly client: KMSClient,
    private readonly keyId: string,
    region: string | null = null,
  ) {
    this.description = `aws-kms key ${keyId}${region === null ? '' : ` in ${region}`}`;
  }

  async wrap(plaintext: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    const out = await this.send(() =>
      this.client.send(
        new this.sdk.GenerateDataKeyCommand({
          KeyId: this.keyId,
          KeySpec: 'AES_256',
          EncryptionContext: { ...context },
        }),
      ),
    );
    if (!out.Plaintext || !out.CiphertextBlob || out.Plaintext.length !== KEY_BYTES)
      throw new KeyProviderError(SETTING, 'KMS returned no usable data key');
    const dataKey = Buffer.from(out.Plaintext);
    try {
      const { nonce, ciphertext } = aeadSeal(dataKey, plaintext, contextBytes(context));
      const header = Buffer.alloc(3);
      header[0] = FORMAT;
      header.writeUInt16BE(out.CiphertextBlob.length, 1);
      return Buffer.concat([header, out.CiphertextBlob, nonce, ciphertext]);
    } finally {
      dataKey.fill(0);
    }
  }

  async unwrap(wrapped: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    const bytes = Buffer.from(wrapped);
    if (bytes[0] !== FORMAT || bytes.length < 3)
      throw new KeyProviderError(
        SETTING,
        'the stored keyring was not wrapped by the aws-kms provider',
      );
    const blobEnd = 3 + bytes.readUInt16BE(1);
    const blob = bytes.subarray(3, blobEnd);
    const out = await this.send(() =>
      this.client.send(
        new this.sdk.DecryptCommand({
          KeyId: this.keyId,
          CiphertextBlob: blob,
          EncryptionContext: { ...context },
        }),
      ),
    );
    if (!out.Plaintext) throw new KeyProviderError(SETTING, 'KMS returned no data key');
    const dataKey = Buffer.from(out.Plaintext);
    try {
      return aeadOpen(
        dataKey,
        {
          nonce: bytes.subarray(blobEnd, blobEnd + NONCE_BYTES),
          ciphertext: bytes.subarray(blobEnd + NONCE_BYTES),
        },
        contextBytes(context),
      );
    } catch {
      throw new KeyProviderError(
        SETTING,
        'the keyring does not open with the data key KMS returned (the stored keyring was altered)',
      );
    } finally {
      dataKey.fill(0);
    }
  }

  /** Runs a KMS call (the SDK retries throttling itself) and turns its failures into one clear sentence. */
  private async send<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const name = (err as { name?: string }).name ?? 'Error';
      const reasons: Record<string, string> = {
        AccessDeniedException: `access to KMS key ${this.keyId} was denied`,
        DisabledException: `KMS key ${this.keyId} is disabled`,
        NotFoundException: `KMS key ${this.keyId} does not exist`,
        KMSInvalidStateException: `KMS key ${this.keyId} is not usable in its current state`,
        IncorrectKeyException: `the keyring was wrapped under another KMS key than ${this.keyId}`,
        InvalidCiphertextException:
          'KMS refused the stored data key (another key, another encryption context, or altered)',
        ThrottlingException: 'KMS kept throttling the request after retries; try again later',
      };
      const reason =
        reasons[name] ??
        `KMS call failed: ${name}${(err as Error).message ? ` (${(err as Error).message})` : ''}`;
      throw new KeyProviderError(SETTING, reason);
    }
  }
}

/** The `aws-kms` provider's settings. Credentials come from the standard AWS chain, never from here. */
export interface AwsKmsSettings {
  readonly kms: {
    readonly key_id: string | null;
    readonly region: string | null;
    readonly endpoint: string | null;
  };
}

export const awsKmsPlugin: KeyProviderPlugin<'aws-kms', AwsKmsSettings> = {
  name: 'aws-kms',
  summary:
    'a key in AWS KMS (or a KMS-compatible endpoint); one Decrypt at start-up, credentials from the AWS chain',
  fields: ['kms'],
  unset: { kms: { key_id: null, region: null, endpoint: null } },
  configSchema: {
    kms: {
      type: 'object',
      additionalProperties: false,
      required: ['key_id', 'region', 'endpoint'],
      properties: {
        key_id: { type: ['string', 'null'], minLength: 1 },
        region: { type: ['string', 'null'], minLength: 1 },
        endpoint: { type: ['string', 'null'], pattern: '^https?://' },
      },
    },
  },
  requestSchema: {
    kms: {
      type: 'object',
      additionalProperties: false,
      required: ['key_id'],
      properties: {
        key_id: { type: 'string', minLength: 1, maxLength: 2048 },
        region: { type: 'string', minLength: 1, maxLength: 64 },
        endpoint: { type: 'string', maxLength: 2048, pattern: '^https?://' },
      },
    },
  },
  paths: [],
  env: [
    {
      env: 'COFFER_KMS_KEY_ID',
      field: 'kms.key_id',
      kind: 'string',
      meaning: 'key id, ARN or alias',
    },
    { env: 'COFFER_KMS_REGION', field: 'kms.region', kind: 'string', meaning: 'the AWS region' },
    {
      env: 'COFFER_KMS_ENDPOINT',
      field: 'kms.endpoint',
      kind: 'string',
      meaning: 'an http(s) URL of a KMS-compatible endpoint instead of AWS',
    },
  ],
  example: { key_provider: 'aws-kms', kms: { key_id: 'alias/coffer', region: 'eu-west-1' } },
  problem: ({ kms }) =>
    kms.key_id === null
      ? { field: 'kms.key_id', message: 'the aws-kms provider needs a KMS key id, ARN or alias' }
      : null,
  open: async ({ kms }) => {
    const sdk = await import('@aws-sdk/client-kms');
    return {
      provider: new AwsKmsProvider(
        sdk,
        new sdk.KMSClient({
          ...(kms.region === null ? {} : { region: kms.region }),
          ...(kms.endpoint === null ? {} : { endpoint: kms.endpoint }),
          maxAttempts: 5,
        }),
        kms.key_id!,
        kms.region,
      ),
    };
  },
};
