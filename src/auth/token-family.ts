/** A delegated token's family: the ancestors whose state it takes, and the descendants revoked with it. */
import { statusOf, type TokenRecord, type TokenStatus } from '../model/tokens.js';
import type { PrincipalFactory } from './principal.js';

/**
 * A token's status as its use would find it: a delegated token whose ancestor is revoked is revoked (and
 * one whose ancestor expired, expired), though its own record may not say so yet (authenticator.ts).
 */
export function effectiveStatus(
  record: TokenRecord,
  byId: ReadonlyMap<string, TokenRecord>,
  now: number,
): TokenStatus {
  const own = statusOf(record, now);
  if (own === 'revoked') return own;
  let worst = own;
  const seen = new Set([record.id]);
  for (let parent = record.parent; parent !== undefined && !seen.has(parent); ) {
    seen.add(parent);
    const ancestor = byId.get(parent);
    if (!ancestor) return 'expired'; // purged after it expired (or deleted): not usable
    const status = statusOf(ancestor, now);
    if (status === 'revoked') return 'revoked';
    if (status === 'expired') worst = 'expired';
    parent = ancestor.parent;
  }
  return worst;
}

/**
 * A token's status as a listing shows it: its effective status, and `role_deleted` for one neither revoked
 * nor expired whose role (or login role) is gone — refused at every use, listed with the live ones.
 */
export function listedStatus(
  record: TokenRecord,
  byId: ReadonlyMap<string, TokenRecord>,
  now: number,
  principals: Pick<PrincipalFactory, 'forToken'>,
): TokenStatus {
  const status = effectiveStatus(record, byId, now);
  return status === 'active' && !principals.forToken(record) ? 'role_deleted' : status;
}

/** The ids of the tokens `id` created, and theirs, among `records`. */
export function descendantsOf(id: string, records: readonly TokenRecord[]): string[] {
  const children = new Map<string, string[]>();
  for (const r of records)
    if (r.parent !== undefined) children.set(r.parent, [...(children.get(r.parent) ?? []), r.id]);
  const out: string[] = [];
  const seen = new Set([id]);
  const queue = [id];
  while (queue.length > 0)
    for (const child of children.get(queue.shift()!) ?? [])
      if (!seen.has(child)) {
        seen.add(child);
        out.push(child);
        queue.push(child);
      }
  return out;
}
