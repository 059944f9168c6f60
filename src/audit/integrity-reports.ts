/**
 * Stored records that fail their check, reported as `store.integrity_error` operator events (logged at
 * error level and audited) with the record's kind, storage key and what is wrong — never its bytes. The
 * same failure met again and again (every request while a rollback is refused, say) is reported once a
 * minute, so a broken store cannot flood the audit log.
 */
import { BoundedCache } from '../bounded-cache.js';
import type { OperatorEvents } from '../model/operator-events.js';
import type { RecordIntegrityError } from '../store/record-seal.js';

const EVERY_MS = 60_000;

export function integrityReporter(
  events: OperatorEvents,
  now: () => number,
): (error: RecordIntegrityError) => void {
  const last = new BoundedCache<string, number>(1000);
  return (error) => {
    const what = `${error.kind}\0${error.storageKey}\0${error.problem}`;
    const at = now();
    const before = last.get(what);
    if (before !== undefined && at - before < EVERY_MS) return;
    last.set(what, at);
    void events
      .record(
        'store.integrity_error',
        { kind: error.kind, key: error.storageKey, problem: error.problem },
        'INTEGRITY ERROR: a stored record failed its integrity check; it was not used',
        'error',
      )
      .catch(() => undefined);
  };
}
