/**
 * The root token. Set by COFFER_ROOT_TOKEN (its hash replaces the stored one at every start), or
 * generated on first start and handed back once so main.ts can print it; only its argon2id hash is
 * stored. When the root token has the `cfr_<id>_<secret>` shape its id is stored too, so other values
 * of that shape can be told apart from it without any argon2 work. The record is sealed
 * (store/record-seal.ts); one that fails to open is never used: with COFFER_ROOT_TOKEN set it is replaced,
 * without it start-up refuses (a new root token is never generated over a damaged one).
 */
import type { StorageBackend } from '../storage/backend.js';
import { ROOT_TOKEN_KEY as KEY } from '../storage/layout.js';
import { RecordIntegrityError, type RecordSeal } from '../store/record-seal.js';
import type { Argon2Gate } from './argon2-gate.js';
import { generateToken, parseToken } from './token-format.js';

export interface RootRecord {
  /** The id part when the root token has the cfr_ shape, else null. */
  readonly id: string | null;
  /** argon2id hash of the whole root token value. */
  readonly hash: string;
  readonly updatedAt: number;
}

export interface EstablishedRoot {
  readonly record: RootRecord;
  /** Set only when a root token was generated now: the one and only time it exists in clear. */
  readonly generated?: string;
  /**
   * What this start did to the root token: generated one, set it from COFFER_ROOT_TOKEN on a store that had
   * none, replaced a different stored one with it, or nothing (the same token as before).
   */
  readonly change: 'generated' | 'set' | 'replaced' | null;
}

export async function establishRootToken(
  storage: StorageBackend,
  seal: RecordSeal,
  argon2: Argon2Gate,
  configured: string | undefined,
  now: number,
): Promise<EstablishedRoot> {
  if (configured !== undefined) {
    const stored = await openStored(storage, seal).catch((err: unknown) => {
      if (err instanceof RecordIntegrityError) return undefined; // replaced by the configured token below
      throw err;
    });
    // The same token as before: keep its record, so a change of root token is a real event.
    if (stored && (await argon2.verify(stored.hash, configured)))
      return { record: stored, change: null };
    const record: RootRecord = {
      id: parseToken(configured)?.id ?? null,
      hash: await argon2.hash(configured),
      updatedAt: now,
    };
    await storage.atomic([KEY], () => ({
      writes: [{ op: 'put', key: KEY, value: seal.seal('root-token', KEY, record) }],
      result: undefined,
    }));
    return { record, change: stored ? 'replaced' : 'set' };
  }
  const stored = await openStored(storage, seal);
  if (stored) return { record: stored, change: null };

  const token = generateToken();
  const record: RootRecord = { id: token.id, hash: await argon2.hash(token.value), updatedAt: now };
  const winner = await storage.atomic([KEY], ([current]) =>
    current
      ? { writes: [], result: current }
      : {
          writes: [{ op: 'put', key: KEY, value: seal.seal('root-token', KEY, record) }],
          result: undefined,
        },
  );
  // Another process generated one first: theirs stands, and theirs was printed by them.
  if (winner) return { record: seal.open<RootRecord>('root-token', KEY, winner), change: null };
  return { record, generated: token.value, change: 'generated' };
}

/** The stored root token record, for a process that did not establish it (a worker). */
export function readRootToken(
  storage: StorageBackend,
  seal: RecordSeal,
): Promise<RootRecord | undefined> {
  return openStored(storage, seal);
}

/** The stored record; throws RecordIntegrityError when it fails to open. */
async function openStored(
  storage: StorageBackend,
  seal: RecordSeal,
): Promise<RootRecord | undefined> {
  const bytes = await storage.get(KEY);
  return bytes && seal.open<RootRecord>('root-token', KEY, bytes);
}
