/**
 * Token records in storage (`T<id>`). A record holds the id, the argon2id hash of the secret, the grant
 * (role or scopes), metadata and times; never the token value. Each is sealed with its storage key bound in
 * (record-seal.ts): a record that fails to open is never used — `get` reports it and answers as if there
 * were none (the token is refused with 401), `list` leaves it out and reports it, `read` and `revoke` throw
 * its RecordIntegrityError (answered 500 integrity_error where every such error is, http/problem.ts).
 *
 * A revocation is also recorded in the keyring (authenticated by the master key), right after the record.
 * A record that says "not revoked" for a token the keyring lists is an older copy put back (a replay): it
 * is reported like a damaged record and read as revoked, at the time the keyring gives. Processes learn of
 * other processes' revocations by reloading the keyring when they open a record they have not opened
 * before, and at least once a second (app.ts).
 */
import { statusOf, type TokenRecord } from '../model/tokens.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { type LoggedPlan, withEvents } from './event-log.js';
import type { KeyringHolder } from './keyring-store.js';
import { LastOpened } from './last-opened.js';
import { TOKENS_RANGE, tokenKey } from './layout.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

/** What a renewal came to (TokenRecords.renew). */
export type Renewal =
  | { readonly outcome: 'renewed'; readonly record: TokenRecord }
  | { readonly outcome: 'missing' | 'revoked' | 'expired' };

export class TokenRecords {
  private readonly lastOpened = new LastOpened<TokenRecord>(10_000);

  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    /** Where revocations are anchored: the keyring holder. */
    private readonly revocations: Pick<
      KeyringHolder,
      'revocationOf' | 'recordRevocation' | 'refresh' | 'guard' | 'eventsWritten'
    >,
    /** Told of every record that fails to open (logged and audited by the caller). */
    private readonly onIntegrityError: (error: RecordIntegrityError) => void,
  ) {}

  /**
   * For authentication, on every request: a damaged record reads as none, so its token is refused with
   * 401. The record is read every time (a revocation applies at once), but opened only when its bytes
   * differ from the ones last opened for that id: the same bytes open to the same record.
   */
  async get(id: string): Promise<TokenRecord | undefined> {
    this.revocations.guard();
    const key = tokenKey(id);
    const bytes = await this.storage.get(key);
    if (!bytes) return undefined;
    let opened = false;
    // A record that fails is not remembered: it is reported again on each use.
    const record = this.openOrReport(key, bytes, () =>
      this.lastOpened.get(id, bytes, () => {
        opened = true;
        return this.seal.open<TokenRecord>('token', key, bytes);
      }),
    );
    // Bytes not seen before may be a replay of a record revoked since this process last loaded the keyring.
    if (opened) await this.revocations.refresh();
    return record && this.checkedAgainstKeyring(key, record);
  }

  /** For managing a token: a damaged record is a RecordIntegrityError (500), not a token that does not exist. */
  async read(id: string): Promise<TokenRecord | undefined> {
    this.revocations.guard();
    const key = tokenKey(id);
    const bytes = await this.storage.get(key);
    if (!bytes) return undefined;
    return this.checkedAgainstKeyring(key, this.seal.open<TokenRecord>('token', key, bytes));
  }

  /**
   * Stores a new record, with `alongside` in the same transaction: 'created', or 'taken' when the id is
   * already taken. A record with a parent is stored only while the parent is live, checked in the same
   * transaction ('parent-gone'), so a child never outlives a revocation of its parent that it raced.
   */
  async create(
    record: TokenRecord,
    alongside: readonly StorageWrite[] = [],
    now = Date.now(),
  ): Promise<'created' | 'taken' | 'parent-gone'> {
    this.revocations.guard();
    const key = tokenKey(record.id);
    const value = this.seal.seal('token', key, record);
    const parent = record.parent;
    let failed: RecordIntegrityError | undefined;
    const keys = parent === undefined ? [key] : [key, tokenKey(parent)];
    const result = await this.storage.atomic(keys, ([current, parentBytes]) => {
      failed = undefined;
      if (current) return { writes: [], result: 'taken' as const };
      if (parent !== undefined) {
        if (!parentBytes || this.revocations.revocationOf(parent))
          return { writes: [], result: 'parent-gone' as const };
        try {
          const held = this.seal.open<TokenRecord>('token', tokenKey(parent), parentBytes);
          if (statusOf(held, now) !== 'active')
            return { writes: [], result: 'parent-gone' as const };
        } catch (err) {
          if (!(err instanceof RecordIntegrityError)) throw err;
          failed = err;
          return { writes: [], result: 'parent-gone' as const };
        }
      }
      return { writes: [{ op: 'put', key, value }, ...alongside], result: 'created' as const };
    });
    if (failed) throw failed;
    return result;
  }

  /**
   * Marks a token revoked, with `alongside` and the revocation of `descendants` (the tokens it created, and
   * theirs) in the same transaction; 'missing' when there is none, 'already' when it was revoked before
   * (and nothing is written but its descendants' revocations, if one was left live). `revoked`: the ids
   * this call revoked.
   */
  async revoke(
    id: string,
    now: number,
    alongside: readonly StorageWrite[] = [],
    descendants: readonly string[] = [],
    actor = 'system',
  ): Promise<{ outcome: 'revoked' | 'already' | 'missing'; revoked: string[] }> {
    this.revocations.guard();
    const key = tokenKey(id);
    const keys = [key, ...descendants.map(tokenKey)];
    let failed: RecordIntegrityError | undefined;
    let revoked: TokenRecord[] = [];
    // The revocation is an event in the event log, in the same transaction (store/event-log.ts).
    const [logged, plan] = withEvents(
      { seal: this.seal, storage: this.storage },
      keys,
      (current): LoggedPlan<'revoked' | 'already' | 'missing'> => {
        failed = undefined;
        revoked = [];
        const writes: StorageWrite[] = [];
        let outcome: 'revoked' | 'already' | 'missing' = 'missing';
        for (const [i, bytes] of current.entries()) {
          if (!bytes) continue;
          let record: TokenRecord;
          try {
            record = this.seal.open<TokenRecord>('token', keys[i]!, bytes);
          } catch (err) {
            if (!(err instanceof RecordIntegrityError)) throw err;
            if (i === 0) {
              failed = err;
              return { writes: [], result: 'missing' as const };
            }
            continue; // a damaged descendant is refused at its every use anyway
          }
          if (i === 0) outcome = record.revokedAt === null ? 'revoked' : 'already';
          if (record.revokedAt !== null) continue;
          const marked = { ...record, revokedAt: now };
          revoked.push(marked);
          writes.push({
            op: 'put',
            key: keys[i]!,
            value: this.seal.seal('token', keys[i]!, marked),
          });
        }
        if (outcome === 'missing') return { writes: [], result: outcome };
        if (writes.length === 0) return { writes: [], result: outcome };
        return {
          writes: [...writes, ...alongside],
          result: outcome,
          events: [
            {
              kind: 'token',
              operation: 'revoke',
              token_id: id,
              revoked: revoked.map((r) => r.id),
              actor,
            },
          ],
        };
      },
    );
    const result = await this.storage.atomic(logged, plan);
    if (failed) throw failed;
    // Its event is in the log: this process's event streams and webhooks, and its siblings', read it now.
    if (revoked.length > 0) this.revocations.eventsWritten();
    for (const record of revoked) await this.anchor(record);
    return { outcome: result, revoked: revoked.map((r) => r.id) };
  }

  /**
   * Moves a live token's expiry to `expiresAt` (`until` decides it from the current record, or says why not):
   * 'renewed' with the record as stored, or 'missing', 'revoked' or 'expired' and nothing written. A later
   * expiry only: an older copy of the record put back can only make the token expire sooner.
   */
  async renew(id: string, now: number, until: (current: TokenRecord) => number): Promise<Renewal> {
    this.revocations.guard();
    const key = tokenKey(id);
    let failed: RecordIntegrityError | undefined;
    const result = await this.storage.atomic<Renewal>([key], ([current]) => {
      if (!current) return { writes: [], result: { outcome: 'missing' as const } };
      let record: TokenRecord;
      try {
        record = this.seal.open<TokenRecord>('token', key, current);
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
        failed = err;
        return { writes: [], result: { outcome: 'missing' as const } };
      }
      // Revoked by its record or by the keyring (a record put back from before its revocation): the plan
      // may run more than once, so it only decides; the caller's next use reports a replayed record.
      if (record.revokedAt !== null || this.revocations.revocationOf(id))
        return { writes: [], result: { outcome: 'revoked' as const } };
      if (record.expiresAt <= now) return { writes: [], result: { outcome: 'expired' as const } };
      const expiresAt = Math.max(record.expiresAt, until(record));
      if (expiresAt === record.expiresAt)
        return { writes: [], result: { outcome: 'renewed' as const, record } };
      // A token from before renewal existed keeps the lifetime it was made with, for its next renewal.
      const renewed: TokenRecord = {
        ...record,
        expiresAt,
        ttl: record.ttl ?? Math.round((record.expiresAt - record.createdAt) / 1000),
      };
      return {
        writes: [{ op: 'put', key, value: this.seal.seal('token', key, renewed) }],
        result: { outcome: 'renewed' as const, record: renewed },
      };
    });
    if (failed) throw failed;
    return result;
  }

  /**
   * Records a revoked token's revocation in the keyring, if it is not there yet. Done after the record
   * changed (a crash in between leaves the record revoked; revoking again anchors it).
   */
  async anchor(record: TokenRecord): Promise<void> {
    if (record.revokedAt === null || this.revocations.revocationOf(record.id)) return;
    await this.revocations.recordRevocation(record.id, {
      revokedAt: record.revokedAt,
      expiresAt: record.expiresAt,
    });
  }

  /**
   * Deletes the records of tokens that expired before `before` (tidy: operator/tidy.ts), and returns how
   * many. An expired token is refused whatever its record says, so its record only serves listings
   * (`?all=true`) and is safe to drop: a copy put back later is as expired. Each is checked again inside
   * its own delete; a record that does not open is left (it is reported at its every use).
   */
  async purgeExpired(before: number): Promise<number> {
    this.revocations.guard();
    const ended: Uint8Array[] = [];
    for await (const entry of this.storage.scan(TOKENS_RANGE)) {
      const record = this.openOrReport(entry.key, entry.value);
      if (record && record.expiresAt < before) ended.push(entry.key);
    }
    let purged = 0;
    for (const key of ended) {
      const gone = await this.storage.atomic([key], ([bytes]) => {
        if (!bytes) return { writes: [], result: false };
        const record = this.openOrReport(key, bytes);
        if (!record || record.expiresAt >= before) return { writes: [], result: false };
        return { writes: [{ op: 'delete', key }], result: true };
      });
      if (gone) purged++;
    }
    return purged;
  }

  async list(): Promise<TokenRecord[]> {
    this.revocations.guard();
    const out: TokenRecord[] = [];
    for await (const entry of this.storage.scan(TOKENS_RANGE)) {
      const record = this.openOrReport(entry.key, entry.value);
      if (record) out.push(this.checkedAgainstKeyring(entry.key, record));
    }
    return out;
  }

  /** `record`, read as revoked (and reported) when it is an older copy from before a revocation the keyring records. */
  private checkedAgainstKeyring(key: Uint8Array, record: TokenRecord): TokenRecord {
    const revocation =
      record.revokedAt === null ? this.revocations.revocationOf(record.id) : undefined;
    if (!revocation) return record;
    this.onIntegrityError(
      new RecordIntegrityError(
        'token',
        printableKey(key),
        "is an older copy from before the token's revocation (a replay); the token stays revoked",
      ),
    );
    return { ...record, revokedAt: revocation.revokedAt };
  }

  private openOrReport(
    key: Uint8Array,
    bytes: Uint8Array,
    open = (): TokenRecord => this.seal.open<TokenRecord>('token', key, bytes),
  ): TokenRecord | undefined {
    try {
      return open();
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      this.onIntegrityError(err);
      return undefined;
    }
  }
}
