/**
 * The SQL text of a group commit's transaction (postgres-backend.ts): the statement that takes its key
 * locks, the read of its keys, its writes and the NOTIFY of each announced key it touches. Its values are
 * written into the text (several statements in one round trip take no parameters).
 */
import { createHash } from 'node:crypto';
import type { StorageWrite } from './backend.js';

type Put = Extract<StorageWrite, { op: 'put' }>;

/** The locks a transaction takes, by key (latin1): exclusive where it writes the key, shared otherwise. */
export type Locks = Map<string, { key: Uint8Array; exclusive: boolean }>;

export function nameOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}

/** Asks for `key`'s lock in `locks`, exclusive when `exclusive` (a lock once exclusive stays so). */
export function want(locks: Locks, key: Uint8Array, exclusive: boolean): void {
  const name = nameOf(key);
  locks.set(name, { key, exclusive: exclusive || (locks.get(name)?.exclusive ?? false) });
}

/**
 * The lock every transaction that takes positions holds shared, and a reader of settled positions takes
 * exclusive (postgres-positions.ts): no record's key, which all begin with a letter.
 */
export const POSITIONS_LOCK_KEY = Buffer.from('\u0000positions', 'latin1');

/**
 * The statements, after a group's key locks (POSITIONS_LOCK_KEY's among them), that give its transaction an
 * id and then take `count` positions from `sequence`: a transaction holding a position has had its id since
 * before it took it (postgres-positions.ts relies on it).
 */
export function takePositions(sequence: string, count: number): string[] {
  return [
    'SELECT txid_current()',
    `SELECT nextval('${sequence}') AS p FROM generate_series(1, ${count})`,
  ];
}

/**
 * How long a transaction of several writes waits for any one lock before PostgreSQL gives it up
 * (lock_not_available): a member that needs a key some transaction holds a long while (held up from
 * outside, or a row of the table locked by another session) would hold back every write grouped with it.
 * Given up, the group's members run again one by one (postgres-backend.ts), and only that member waits.
 */
export const GROUP_LOCK_WAIT_MS = 250;

/** The longest NOTIFY payload sent (PostgreSQL's limit is 8000 bytes). */
const NOTIFY_PAYLOAD = 7900;

export class GroupSql {
  /** Mixed into every lock id, so that two schemas in one database never share locks. */
  private readonly lockSalt: Buffer;
  private readonly positionsLockId: bigint;

  constructor(
    private readonly table: string,
    private readonly channel: string,
    /** The announced keys, as latin1 strings for lookup. */
    private readonly announced: ReadonlySet<string>,
    /** Every key starting with one of these is announced too (latin1). */
    private readonly announcedPrefixes: readonly string[] = [],
    /** A key starting with one of these is announced as the prefix, once per transaction (latin1). */
    private readonly announcedOnce: readonly string[] = [],
  ) {
    this.lockSalt = Buffer.from(`coffer-lock:${table}\u0000`);
    this.positionsLockId = this.lockId(POSITIONS_LOCK_KEY);
  }

  /**
   * BEGIN, the locks, `positions` taken from `sequence` (postgres-positions.ts) and the read of `keys`, as
   * the statements of one round trip; the read's result is the last, the positions' the one before it.
   * For a group of several writes (`shared`), each lock is waited for GROUP_LOCK_WAIT_MS at most.
   */
  opening(
    locks: Locks,
    keys: readonly Uint8Array[],
    positions: { readonly sequence: string; readonly count: number },
    shared = false,
  ): string {
    const opening = shared
      ? ['BEGIN', `SET LOCAL lock_timeout = ${GROUP_LOCK_WAIT_MS}`]
      : ['BEGIN'];
    if (locks.size > 0) opening.push(this.lockStatement([...locks.values()]));
    if (positions.count > 0) opening.push(...takePositions(positions.sequence, positions.count));
    if (keys.length > 0)
      opening.push(`SELECT k, v FROM ${this.table} WHERE k = ANY(${byteaArray(keys)})`);
    return opening.join(';\n');
  }

  /** The statement that takes the positions' lock exclusive: the barrier of postgres-positions.ts. */
  barrierLock(): string {
    return `SELECT pg_advisory_xact_lock(${this.positionsLockId})`;
  }

  /**
   * The statements of a plan's writes, in order (the last write to a key decides what it holds), and a
   * NOTIFY for each announced key they touch: PostgreSQL delivers it when (and if) the transaction commits.
   */
  writeStatements(writes: readonly StorageWrite[]): string[] {
    const final = new Map<string, StorageWrite>();
    for (const write of writes) final.set(nameOf(write.key), write);
    const puts = [...final.values()].filter((w): w is Put => w.op === 'put');
    const deletes = [...final.values()].filter((w) => w.op === 'delete');
    const statements: string[] = [];
    if (deletes.length > 0)
      statements.push(
        `DELETE FROM ${this.table} WHERE k = ANY(${byteaArray(deletes.map((w) => w.key))})`,
      );
    if (puts.length > 0)
      statements.push(
        `INSERT INTO ${this.table} (k, v) VALUES ${puts
          .map((w) => `(${bytea(w.key)}, ${bytea(w.value)})`)
          .join(', ')} ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`,
      );
    // The announced keys in as few NOTIFYs as their payload limit allows (8000 bytes): a key's hex, comma
    // separated. NOTIFY answers no rows, so the client parses nothing more per write.
    const names = new Set<string>();
    for (const name of final.keys()) {
      if (this.announced.has(name) || this.announcedPrefixes.some((p) => name.startsWith(p)))
        names.add(name);
      else {
        const once = this.announcedOnce.find((p) => name.startsWith(p));
        if (once !== undefined) names.add(once);
      }
    }
    let payload = '';
    for (const name of names) {
      const hex = Buffer.from(name, 'latin1').toString('hex');
      if (payload !== '' && payload.length + 1 + hex.length > NOTIFY_PAYLOAD) {
        statements.push(`NOTIFY "${this.channel}", '${payload}'`);
        payload = '';
      }
      payload = payload === '' ? hex : `${payload},${hex}`;
    }
    if (payload !== '') statements.push(`NOTIFY "${this.channel}", '${payload}'`);
    return statements;
  }

  /**
   * The statement that takes the transaction's key locks, in ascending lock-id order (so transactions never
   * wait for a lower id while holding a higher, and never deadlock); an id both modes ask for is exclusive.
   */
  lockStatement(locks: readonly { key: Uint8Array; exclusive: boolean }[]): string {
    const modes = new Map<bigint, boolean>();
    for (const { key, exclusive } of locks) {
      // The positions' lock, in every group that takes positions, is hashed once.
      const id = key === POSITIONS_LOCK_KEY ? this.positionsLockId : this.lockId(key);
      modes.set(id, (modes.get(id) ?? false) || exclusive);
    }
    const ordered = [...modes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(id) ELSE pg_advisory_xact_lock_shared(id) END)
      FROM unnest(ARRAY[${ordered.map(([id]) => id.toString()).join(',')}]::bigint[],
                  ARRAY[${ordered.map(([, x]) => String(x)).join(',')}]::boolean[]) AS l(id, x)`;
  }

  /** A 64-bit advisory lock id for `key` in this table. */
  private lockId(key: Uint8Array): bigint {
    return createHash('sha256').update(this.lockSalt).update(key).digest().readBigInt64BE(0);
  }
}

/**
 * Bytes as an SQL expression, for statements sent with their values in the text (several statements in one
 * round trip take no parameters): decode of a hex string, which holds nothing but [0-9a-f].
 */
function bytea(bytes: Uint8Array): string {
  return `decode('${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}', 'hex')`;
}

function byteaArray(keys: readonly Uint8Array[]): string {
  return `ARRAY[${keys.map(bytea).join(', ')}]::bytea[]`;
}
