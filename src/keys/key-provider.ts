/**
 * The master key provider contract: wrap and unwrap the keyring. A provider is asked once at start-up
 * (and again only by key-management operations), never per request.
 *
 * `context` names what is wrapped (instance, purpose); a provider must bind it to the ciphertext
 * (associated data, or a KMS encryption context) so a wrapped keyring cannot be replayed elsewhere.
 */
export interface KeyProvider {
  /** The configuration name of this provider, e.g. `local`. */
  readonly name: string;
  /** Which key, in words for an operator (e.g. `aws-kms key alias/coffer`); never anything secret. */
  readonly description: string;
  wrap(plaintext: Uint8Array, context: WrapContext): Promise<Uint8Array>;
  /** Throws KeyProviderError when the wrapped bytes do not open under this provider's key. */
  unwrap(wrapped: Uint8Array, context: WrapContext): Promise<Uint8Array>;
  /**
   * Where the provider can keep small values that whoever writes the data directory cannot put back: the
   * high-water marks (store/high-water.ts). The PKCS#11 provider keeps them in the token; others have none.
   */
  readonly anchor?: HighWaterAnchor;
}

/** Small named values kept outside the data directory (in an HSM token). */
export interface HighWaterAnchor {
  /** The values kept under `name` (usually one; two for a moment while one replaces another). */
  read(name: string): string[];
  /** Keeps `value` under `name`, replacing what was there (the new one first, then the old removed). */
  write(name: string, value: string): void;
}

export type WrapContext = Readonly<Record<string, string>>;

/** A failure of the master key provider; the message names the setting to check and holds no key. */
export class KeyProviderError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'KeyProviderError';
  }
}

/** The context's entries sorted by name and joined unambiguously, for use as associated data. */
export function contextBytes(context: WrapContext): Uint8Array {
  const entries = Object.keys(context)
    .sort()
    .map((name) => `${name}=${context[name]}`);
  return new TextEncoder().encode(entries.join('\0'));
}
