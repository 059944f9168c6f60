/**
 * The root token. Set by COFFER_ROOT_TOKEN (its hash replaces the stored one at every start), or
 * generated on first start and handed back once so main.ts can print it; only its argon2id hash is
 * stored. When the root token has the `cfr_<id>_<secret>` shape its id is stored too, so other values
 * of that shape can be told apart from it without any argon2 work. The record (store/root-token-record.ts)
 * is sealed, and the keyring names it, so an older copy put back is told apart. One that fails to open or
 * is not the named one is never used: with COFFER_ROOT_TOKEN set it is replaced, without it start-up
 * refuses (a new root token is never generated over a damaged one).
 */
import type { RootRecord } from '../model/tokens.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { RecordSeal } from '../store/record-seal.js';
import { RecordIntegrityError } from '../store/record-seal.js';
import { type RootTokenRecord, sealRootRecord } from '../store/root-token-record.js';
import type { Argon2Gate } from './argon2-gate.js';
import { generateToken, parseToken } from './token-format.js';

export type { RootRecord } from '../model/tokens.js';

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

/**
 * The root token of a store being created, made (or taken from COFFER_ROOT_TOKEN) and sealed when the
 * keyring is created (KeyringHolder.open's `newStoreRoot`), so that one keyring write stores and names it.
 */
export class NewStoreRoot {
  private made: EstablishedRoot | undefined;

  constructor(
    private readonly argon2: Argon2Gate,
    private readonly configured: string | undefined,
    private readonly now: number,
  ) {}

  /** The sealed record for the new store. */
  readonly seal = async (seal: RecordSeal): Promise<Uint8Array> => {
    const token = this.configured === undefined ? generateToken() : undefined;
    const value = token?.value ?? this.configured!;
    const record: RootRecord = {
      id: token?.id ?? parseToken(value)?.id ?? null,
      hash: await this.argon2.hash(value),
      updatedAt: this.now,
    };
    this.made = token
      ? { record, generated: token.value, change: 'generated' }
      : { record, change: 'set' };
    return sealRootRecord(seal, record);
  };

  /** What was made, once the keyring that names it was created by this process. */
  get established(): EstablishedRoot | undefined {
    return this.made;
  }
}

export async function establishRootToken(
  stored: RootTokenRecord,
  argon2: Argon2Gate,
  configured: string | undefined,
  now: number,
): Promise<EstablishedRoot> {
  if (configured !== undefined) {
    const current = await stored.read().catch((err: unknown) => {
      if (err instanceof RecordIntegrityError) return undefined; // replaced by the configured token below
      throw err;
    });
    // The same token as before: keep its record, so a change of root token is a real event.
    if (current && (await argon2.verify(current.record.hash, configured))) {
      await stored.nameStored(current);
      return { record: current.record, change: null };
    }
    const record: RootRecord = {
      id: parseToken(configured)?.id ?? null,
      hash: await argon2.hash(configured),
      updatedAt: now,
    };
    await stored.replace(record, { onlyIfUnnamed: false });
    return { record, change: current ? 'replaced' : 'set' };
  }
  const current = await stored.read();
  if (current) {
    // A store from before the keyring named its root token record: the record it has is named now.
    await stored.nameStored(current);
    return { record: current.record, change: null };
  }

  const token = generateToken();
  const record: RootRecord = { id: token.id, hash: await argon2.hash(token.value), updatedAt: now };
  // Another process generated one first: theirs stands, and theirs was printed by them.
  if (!(await stored.replace(record, { onlyIfUnnamed: true }))) {
    const theirs = await stored.read();
    if (!theirs) throw new Error('the root token record another process set is missing');
    return { record: theirs.record, change: null };
  }
  return { record, generated: token.value, change: 'generated' };
}

/**
 * The root token record a running process uses. When another process (another server on the same
 * database) sets a new root token, the keyring names the new record; `follow`, run after each keyring
 * reload, then reads it, so the new root token works and the old one stops without a restart.
 */
export class CurrentRoot {
  private named: Uint8Array | undefined;

  constructor(
    private record: RootRecord,
    private readonly stored: RootTokenRecord,
    private readonly keyring: Pick<KeyringHolder, 'current'>,
  ) {
    this.named = keyring.current().rootRecord;
  }

  get(): RootRecord {
    return this.record;
  }

  /** Reads the root record again when the keyring names another one; true when it changed. */
  async follow(): Promise<boolean> {
    const named = this.keyring.current().rootRecord;
    if (
      named === undefined ||
      (this.named !== undefined && Buffer.compare(named, this.named) === 0)
    )
      return false;
    const current = await this.stored.read();
    if (!current) return false;
    this.record = current.record;
    this.named = named;
    return true;
  }
}
