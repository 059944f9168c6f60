/**
 * One transaction for a group of PostgreSQL writes (postgres-backend.ts, write-batch.ts): the locks of every
 * plan taken at once, their keys read, each plan run on what those before it wrote, then the writes and
 * COMMIT; and the pooled connection it runs on.
 */
import type pg from 'pg';
import type { Plan, PlanFn, Positions, StorageWrite } from './backend.js';
import { unavailable } from './postgres-errors.js';
import {
  type GroupSql,
  type Locks,
  nameOf,
  POSITIONS_LOCK_KEY,
  want,
} from './postgres-group-sql.js';

/** A write waiting for its group's transaction (write-batch.ts). */
export interface PendingWrite {
  readonly keys: readonly Uint8Array[];
  readonly plan: PlanFn<unknown>;
  readonly locks: Locks;
  /** The positions its plan is expected to take (postgres-positions.ts): taken for it in the transaction. */
  readonly positions: number;
  readonly size: number;
  readonly bytes: number;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** What became of one plan of a group's transaction. */
export type Outcome =
  | { readonly kind: 'done'; readonly result: unknown }
  | { readonly kind: 'failed'; readonly error: unknown }
  | {
      readonly kind: 'escalate';
      readonly escalate: readonly Uint8Array[];
      /** It took more positions than were taken for it: this many, next time. */
      readonly positions?: number;
    };

/**
 * Positions for one plan: those taken for it, then, should it want more, stand-ins that only count — its
 * writes are then not applied, and it runs again with as many (PositionsFor.wanted).
 */
export class PositionsFor implements Positions {
  wanted = 0;
  constructor(
    private readonly taken: readonly number[],
    /** Only counting: the plan's writes are not applied (postgres-backend.ts runs it to learn its keys). */
    readonly counting = false,
  ) {}
  next(): number {
    return this.taken[this.wanted++] ?? 0;
  }
  get short(): boolean {
    return this.wanted > this.taken.length;
  }
}

/**
 * A pooled connection for a transaction. A connection lost while checked out is reported as an 'error'
 * event (and as the failing query's error): without a listener the event would end the process. Released
 * as broken (closed, not reused) when it was lost or `broken` says so.
 */
export async function checkout(pool: pg.Pool): Promise<{
  client: pg.PoolClient;
  release: (broken: boolean) => void;
}> {
  const client = await pool.connect().catch((err: unknown) => {
    throw unavailable(err);
  });
  let lost = false;
  const onError = (): void => {
    lost = true;
  };
  client.on('error', onError);
  return {
    client,
    release: (broken) => {
      client.off('error', onError);
      client.release(broken || lost);
    },
  };
}

/**
 * One transaction for a group of plans: the locks of them all, taken at once; their keys read; each plan
 * run in turn on what the plans before it have written (as if they had committed one after another);
 * the writes of those that did not throw, and COMMIT. A plan that throws writes nothing, and its error is
 * its outcome once the others have committed (what it saw is then the store's state).
 */
export async function runGroup(
  pool: pg.Pool,
  groupSql: GroupSql,
  sequence: string,
  group: readonly PendingWrite[],
): Promise<Outcome[]> {
  const keys = new Map<string, Uint8Array>();
  const locks: Locks = new Map();
  let count = 0;
  for (const member of group) {
    for (const key of member.keys) keys.set(nameOf(key), key);
    for (const lock of member.locks.values()) want(locks, lock.key, lock.exclusive);
    count += member.positions;
  }
  if (count > 0) want(locks, POSITIONS_LOCK_KEY, false);
  const { client, release } = await checkout(pool);
  let broken = false;
  try {
    // One round trip: BEGIN, the locks, the positions and the read, as one simple query of several
    // statements.
    const opened = [
      await client.query(
        groupSql.opening(locks, [...keys.values()], { sequence, count }, group.length > 1),
      ),
    ].flat();
    const state = new Map<string, Uint8Array | undefined>();
    if (keys.size > 0)
      for (const row of opened.pop()!.rows as { k: Buffer; v: Buffer }[])
        state.set(row.k.toString('latin1'), row.v);
    const taken =
      count > 0 ? (opened.pop()!.rows as { p: string }[]).map((row) => Number(row.p)) : [];
    taken.sort((a, b) => a - b);
    const held = new Set([...locks].filter(([, l]) => l.exclusive).map(([name]) => name));
    const writes: StorageWrite[] = [];
    const outcomes = group.map((member): Outcome => {
      let decided: Plan<unknown>;
      const positions = new PositionsFor(taken.splice(0, member.positions));
      try {
        decided = member.plan(
          member.keys.map((key) => state.get(nameOf(key))),
          positions,
        );
      } catch (error) {
        return { kind: 'failed', error };
      }
      if (positions.short) return { kind: 'escalate', escalate: [], positions: positions.wanted };
      const escalate = decided.writes
        .filter((w) => !held.has(nameOf(w.key)) && !(w.op === 'put' && w.guarded))
        .map((w) => w.key);
      if (escalate.length > 0) return { kind: 'escalate', escalate };
      for (const w of decided.writes)
        state.set(nameOf(w.key), w.op === 'put' ? w.value : undefined);
      writes.push(...decided.writes);
      return { kind: 'done', result: decided.result };
    });
    // One round trip: the writes, the announcements and COMMIT.
    await client.query([...groupSql.writeStatements(writes), 'COMMIT'].join(';\n'));
    return outcomes;
  } catch (err) {
    // A ROLLBACK that fails means the connection is gone: it is not given back to the pool.
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    release(broken);
  }
}
