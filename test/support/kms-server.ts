/**
 * A small KMS-compatible endpoint for tests: the AWS JSON 1.1 protocol for TrentService.GenerateDataKey,
 * Encrypt and Decrypt, with keys held in memory. Like KMS, it binds the encryption context to the
 * ciphertext (AES-256-GCM associated data) and names the key inside the ciphertext blob. Requests must carry
 * a SigV4 Authorization header (the signature itself is not checked). Errors can be injected.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Key {
  readonly material: Buffer;
  enabled: boolean;
}

export interface KmsCall {
  readonly operation: string;
  readonly keyId: string | undefined;
  readonly context: Record<string, string> | undefined;
}

export class TestKms {
  readonly calls: KmsCall[] = [];
  private readonly keys = new Map<string, Key>();
  private readonly denied = new Set<string>();
  private failures: { type: string; remaining: number } | null = null;
  private server?: Server;
  url = '';

  addKey(id: string): string {
    this.keys.set(id, { material: randomBytes(32), enabled: true });
    return id;
  }

  disable(id: string): void {
    this.keys.get(id)!.enabled = false;
  }

  deny(id: string): void {
    this.denied.add(id);
  }

  /** The next `count` requests fail with the error `type` (e.g. ThrottlingException). */
  failNext(type: string, count: number): void {
    this.failures = { type, remaining: count };
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const operation = String(req.headers['x-amz-target'] ?? '').replace('TrentService.', '');
        const reply = (status: number, payload: unknown): void => {
          res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
          res.end(JSON.stringify(payload));
        };
        const fail = (type: string, message: string): void => reply(400, { __type: type, message });
        if (!String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
          return fail('UnrecognizedClientException', 'missing SigV4 signature');
        const input = JSON.parse(body || '{}') as {
          KeyId?: string;
          EncryptionContext?: Record<string, string>;
          Plaintext?: string;
          CiphertextBlob?: string;
          KeySpec?: string;
        };
        this.calls.push({ operation, keyId: input.KeyId, context: input.EncryptionContext });
        if (this.failures && this.failures.remaining > 0) {
          this.failures.remaining--;
          return fail(this.failures.type, 'injected failure');
        }
        try {
          reply(200, this.handle(operation, input));
        } catch (err) {
          const e = err as { type?: string; message: string };
          fail(e.type ?? 'KMSInternalException', e.message);
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    await new Promise((resolve) => this.server!.close(resolve));
  }

  private usable(id: string | undefined): { id: string; key: Key } {
    const key = id === undefined ? undefined : this.keys.get(id);
    if (!key || id === undefined)
      throw Object.assign(new Error(`key ${id} not found`), { type: 'NotFoundException' });
    if (this.denied.has(id))
      throw Object.assign(new Error('not authorized'), { type: 'AccessDeniedException' });
    if (!key.enabled)
      throw Object.assign(new Error(`${id} is disabled`), { type: 'DisabledException' });
    return { id, key };
  }

  private handle(
    operation: string,
    input: {
      KeyId?: string;
      EncryptionContext?: Record<string, string>;
      Plaintext?: string;
      CiphertextBlob?: string;
    },
  ): object {
    const aad = Buffer.from(JSON.stringify(Object.entries(input.EncryptionContext ?? {}).sort()));
    switch (operation) {
      case 'GenerateDataKey':
      case 'Encrypt': {
        const { id, key } = this.usable(input.KeyId);
        const plaintext =
          operation === 'Encrypt' ? Buffer.from(input.Plaintext ?? '', 'base64') : randomBytes(32);
        const iv = randomBytes(12);
        const cipher = createCipheriv('aes-256-gcm', key.material, iv).setAAD(aad);
        const sealed = Buffer.concat([
          cipher.update(plaintext),
          cipher.final(),
          cipher.getAuthTag(),
        ]);
        const idBytes = Buffer.from(id);
        const blob = Buffer.concat([Buffer.from([idBytes.length]), idBytes, iv, sealed]);
        return {
          KeyId: `arn:aws:kms:local:000000000000:key/${id}`,
          CiphertextBlob: blob.toString('base64'),
          ...(operation === 'GenerateDataKey' ? { Plaintext: plaintext.toString('base64') } : {}),
        };
      }
      case 'Decrypt': {
        const blob = Buffer.from(input.CiphertextBlob ?? '', 'base64');
        const id = blob.subarray(1, 1 + blob[0]!).toString();
        if (input.KeyId !== undefined && input.KeyId !== id)
          throw Object.assign(new Error('wrong key'), { type: 'IncorrectKeyException' });
        const { key } = this.usable(id);
        const rest = blob.subarray(1 + blob[0]!);
        try {
          const decipher = createDecipheriv(
            'aes-256-gcm',
            key.material,
            rest.subarray(0, 12),
          ).setAAD(aad);
          decipher.setAuthTag(rest.subarray(rest.length - 16));
          const plaintext = Buffer.concat([
            decipher.update(rest.subarray(12, rest.length - 16)),
            decipher.final(),
          ]);
          return {
            KeyId: `arn:aws:kms:local:000000000000:key/${id}`,
            Plaintext: plaintext.toString('base64'),
          };
        } catch {
          throw Object.assign(new Error('invalid ciphertext'), {
            type: 'InvalidCiphertextException',
          });
        }
      }
      default:
        throw Object.assign(new Error(`unsupported operation ${operation}`), {
          type: 'UnsupportedOperationException',
        });
    }
  }
}
