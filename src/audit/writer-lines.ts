/**
 * An audit writer's lines (writer.ts): each entry rendered, linked and digested at its place in the chain;
 * the entry that says which requests were refused; a batch handed to the copies.
 */
import {
  type AuditFields,
  digestAfter,
  entryLine,
  isoTime,
  linkOf,
  signCheckpoint,
} from './entry.js';
import type { AuditSink } from './sink.js';
import type { AuditWriterOptions, Pending } from './writer-types.js';

/** Makes `p`'s line at its place after `prev` and `digest` (a checkpoint signs that place). */
export function renderLine(
  p: Pending,
  prev: string,
  digest: string,
  options: Pick<AuditWriterOptions, 'keys' | 'chain' | 'highWater'>,
): void {
  const keys = options.keys();
  if (p.checkpoint) {
    const ts = isoTime(p.ts);
    const highWater = options.highWater?.();
    p.fields = {
      kind: 'checkpoint',
      digest,
      sig: signCheckpoint(keys.signing!, options.chain, p.seq, ts, prev, digest),
      ...(highWater ? { high_water: highWater } : {}),
      // A batch's seal: the store records the other checkpoints, not this one.
      ...(p.recorded ? {} : { batch: true }),
    };
  }
  p.line = entryLine(options.chain, { seq: p.seq, prev }, p.ts, p.fields);
  p.link = linkOf(keys.link!, p.line);
  p.digest = digestAfter(digest, p.line);
}

/**
 * The requests whose lines are still `queue`d when a write fails get 503 instead of their answers: their
 * lines, not written yet, say so (with the status they would have had), and the lines after them are made
 * again to follow on from `written` (the last line written). So the outcome in the log is always the
 * answer the client got. The link to and digest through the queue's new last line; undefined when nothing
 * changed.
 */
export function refuseQueue(
  queue: readonly Pending[],
  code: 'audit_unavailable' | 'storage_unavailable',
  written: { readonly link: string; readonly digest: string },
  options: Pick<AuditWriterOptions, 'keys' | 'chain' | 'highWater'>,
): { link: string; digest: string } | undefined {
  let changed = false;
  for (const p of queue) {
    const outcome = p.fields.outcome as { status?: unknown } | undefined;
    // Entries placed while the log was failing already say 503 and have nobody waiting.
    if (p.fields.kind !== 'request' || p.waiters.length === 0 || outcome?.status === 503) continue;
    p.fields = {
      ...p.fields,
      outcome: { status: 503, code, intended_status: outcome?.status ?? null },
    };
    changed = true;
  }
  if (!changed) return undefined;
  let { link, digest } = written;
  for (const p of queue) {
    renderLine(p, link, digest, options);
    link = p.link;
    digest = p.digest;
  }
  return { link, digest };
}

/** Says in the log which requests were refused (their lines are in the chain, their answers were 503). */
export function refusedEntry(reason: string, seqs: readonly number[]): AuditFields {
  return {
    kind: 'event',
    event: 'audit.refused',
    reason,
    refused_seqs: seqs,
    outcome: { status: 503, code: 'audit_unavailable' },
  };
}

/** Hands a batch's lines to each copy (stdout); a copy's failure is ignored: the chain is whole in its home. */
export async function writeCopies(
  copies: readonly AuditSink[] | undefined,
  lines: readonly string[],
): Promise<void> {
  for (const copy of copies ?? []) {
    try {
      await copy.write(lines);
    } catch {
      // a copy: the chain is whole in its home
    }
  }
}
