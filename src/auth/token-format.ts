/**
 * Token values: `cfr_<id>_<secret>`, id = 16 base62 characters (public: shown in lists, used to revoke),
 * secret = 43 base62 characters (256 bits from the CSPRNG). Only an argon2id hash of the secret is stored.
 */
import { randomBase62 } from '../crypto/random.js';

export const ID_LENGTH = 16;
export const SECRET_LENGTH = 43;
const TOKEN = /^cfr_([0-9A-Za-z]{16})_([0-9A-Za-z]{43})$/;
const ID = /^[0-9A-Za-z]{16}$/;

export interface TokenParts {
  readonly id: string;
  readonly secret: string;
}

export function generateToken(): TokenParts & { readonly value: string } {
  const id = randomBase62(ID_LENGTH);
  const secret = randomBase62(SECRET_LENGTH);
  return { id, secret, value: `cfr_${id}_${secret}` };
}

export function parseToken(value: string): TokenParts | null {
  const m = TOKEN.exec(value);
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

export function isTokenId(text: string): boolean {
  return ID.test(text);
}

/** What a bearer credential may look like on the wire: printable ASCII, no spaces, bounded. */
export const BEARER_VALUE = /^[\x21-\x7e]{1,1024}$/;
