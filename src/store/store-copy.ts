/** Copying every record of one store into another (coffer operator copy-store), resumable after a cut. */
import { createHash } from 'node:crypto';
import type { StorageBackend, StorageEntry } from '../storage/backend.js';
import { KEYRING_KEY } from './keyring-record.js';
import { frame, refuseNonEmpty, SnapshotError, writeAll } from './record-stream.js';

/** What a copy cut off before its end left in a target: its records' count, hash and greatest key. */
interface CopiedPart {
  readonly records: number;
  readonly sha256: string;
  readonly last: Uint8Array | null;
}

async function copiedPart(target: StorageBackend): Promise<CopiedPart> {
  const hash = createHash('sha256');
  let records = 0;
  let last: Uint8Array | null = null;
  for await (const entry of target.everything()) {
    if (Buffer.compare(entry.key, KEYRING_KEY) === 0)
      throw new SnapshotError(
        'the target already holds a whole copy (its keyring record is there): nothing to resume',
      );
    hash.update(frame(entry));
    records++;
    last = entry.key;
  }
  return { records, sha256: hash.digest('hex'), last };
}

/**
 * `source`'s records, for a copy that resumes after `part`: those up to the part's last key (the keyring
 * aside, which a copy writes last) must be exactly what the part holds — checked before the first record
 * is handed on, so nothing is written when they are not — and those after it, with the keyring, are
 * handed on.
 */
async function* after(
  source: AsyncIterable<StorageEntry>,
  part: CopiedPart,
  counted: { records: number },
): AsyncGenerator<StorageEntry> {
  const hash = createHash('sha256');
  let before = 0;
  let checked = part.last === null;
  const check = (): void => {
    checked = true;
    if (before !== part.records || hash.digest('hex') !== part.sha256)
      throw new SnapshotError(
        'the target does not hold the beginning of a copy of this store (it differs from the store up to its last record): empty it and copy again',
      );
  };
  for await (const entry of source) {
    counted.records++;
    const keyring = Buffer.compare(entry.key, KEYRING_KEY) === 0;
    if (!checked && !keyring && Buffer.compare(entry.key, part.last!) <= 0) {
      hash.update(frame(entry));
      before++;
      continue;
    }
    if (!checked && !keyring) check();
    yield entry;
  }
  if (!checked) check();
}

/**
 * Copies every record of `source` (one consistent state of it) into `target`, the keyring last; then
 * counts the target's records against the source's. The target must be empty — or, with `resume`, hold
 * what an earlier copy of the same store cut off before its end wrote (no keyring record yet, every record
 * equal to the source's up to its last): the copy then goes on after it.
 */
export async function copyStore(
  source: StorageBackend,
  target: StorageBackend,
  onRecord?: (records: number) => void,
  options: { readonly resume?: boolean } = {},
): Promise<{ records: number; resumedAfter: number }> {
  const part: CopiedPart = options.resume
    ? await copiedPart(target)
    : { records: 0, sha256: '', last: null };
  if (!options.resume) await refuseNonEmpty(target, 'a store is copied');
  const counted = { records: 0 };
  await writeAll(target, after(source.everything(), part, counted), (written) =>
    onRecord?.(part.records + written),
  );
  let copied = 0;
  for await (const _ of target.everything()) copied++;
  if (copied !== counted.records)
    throw new SnapshotError(
      `the target holds ${copied} records after the copy, not ${counted.records}`,
    );
  return { records: counted.records, resumedAfter: part.records };
}
