/**
 * The root token. Set by COFFER_ROOT_TOKEN (its hash replaces the stored one at every start), or
 * generated on first start and handed back once so main.ts can print it; only its argon2id hash is
 * stored. When the root token has the `cfr_<id>_<secret>` shape its id is stored too, so other values
 * of that shape can be told apart from it without any argon2 work.
 */
import { Packr } from 'msgpackr';
import type { StorageBackend } from '../storage/backend.js';
import { systemKey } from '../storage/layout.js';
import type { Argon2Gate } from './argon2-gate.js';
import { generateToken, parseToken } from './token-format.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const KEY = systemKey('root-token');

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
  argon2: Argon2Gate,
  configured: string | undefined,
  now: number,
): Promise<EstablishedRoot> {
  if (configured !== undefined) {
    const current = await storage.get(KEY);
    const stored = current && (packr.unpack(current) as RootRecord);
    // The same token as before: keep its record, so a change of root token is a real event.
    if (stored && (await argon2.verify(stored.hash, configured))) return { record: stored, change: null };
    const record: RootRecord = { id: parseToken(configured)?.id ?? null, hash: await argon2.hash(configured), updatedAt: now };
    await storage.atomic([KEY], () => ({ writes: [{ op: 'put', key: KEY, value: packr.pack(record) }], result: undefined }));
    return { record, change: stored ? 'replaced' : 'set' };
  }
  const stored = await storage.get(KEY);
  if (stored) return { record: packr.unpack(stored) as RootRecord, change: null };

  const token = generateToken();
  const record: RootRecord = { id: token.id, hash: await argon2.hash(token.value), updatedAt: now };
  const winner = await storage.atomic([KEY], ([current]) =>
    current ? { writes: [], result: current } : { writes: [{ op: 'put', key: KEY, value: packr.pack(record) }], result: undefined },
  );
  // Another process generated one first: theirs stands, and theirs was printed by them.
  if (winner) return { record: packr.unpack(winner) as RootRecord, change: null };
  return { record, generated: token.value, change: 'generated' };
}

/** The stored root token record, for a process that did not establish it (a worker). */
export async function readRootToken(storage: StorageBackend): Promise<RootRecord | undefined> {
  const stored = await storage.get(KEY);
  return stored && (packr.unpack(stored) as RootRecord);
}
