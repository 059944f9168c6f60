/**
 * Which stored changes the audit log covers. Every stored version must be named by an audit entry: the
 * write's request entry (namespace, key, version), or — when the process was killed between the commit and
 * that entry — the write's intent entry, written before the commit and durable with it (audit/audit-log.ts
 * `intent`), whose request never got its own entry. An intent counts wherever it is: in its chain's file,
 * put back into the log by an `audit.intent_recovered` event, or still only in the store as the copy
 * committed with its change (audit/intent-journal.ts) when no server has started since a power loss. One
 * such open intent covers one version of its key. Versions created before the oldest entry in the log (an
 * older log, archived or from before the audit log existed) are counted apart.
 */
import { unpackVersion } from '../kv/records.js';
import type { StorageBackend } from '../storage/backend.js';
import { parseVersionKey, VERSIONS_RANGE } from '../storage/layout.js';
import type { RecordSeal } from '../store/record-seal.js';
import type { StoredChains } from './database-copy.js';
import { chainFiles, chainFileText } from './files.js';
import { intentCopies } from './intent-recovery.js';

const MAX_LISTED = 100;

export interface StoredVersion {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
}

export interface Coverage {
  readonly versions: number;
  /** Named by their write's request entry. */
  readonly by_request: number;
  /** Named only by the intent entry of a write whose process stopped before its request entry. */
  readonly by_intent: number;
  /** Created before the oldest entry of the log read. */
  readonly before_log: number;
  readonly uncovered_count: number;
  /** The first uncovered versions. */
  readonly uncovered: StoredVersion[];
}

interface Entry {
  readonly kind?: string;
  readonly event?: string;
  readonly intent?: Entry;
  readonly ts?: string;
  readonly action?: string;
  readonly request_id?: string;
  readonly namespace?: string;
  readonly key?: string;
  readonly version?: number;
}

const keyOf = (namespace: string, key: string): string => `${namespace}\0${key}`;

/** Coverage by the chains of `paths`, and with `stored` (shared storage) every other chain the store keeps. */
export async function auditCoverage(
  paths: readonly string[],
  storage: StorageBackend,
  seal: RecordSeal,
  stored?: StoredChains,
): Promise<Coverage> {
  let logStart = Infinity;
  const written = new Set<string>();
  const answered = new Set<string>();
  // By request id: the same intent may be both in a file and in the store, or recovered twice.
  const intents = new Map<string, Entry>();
  const addIntent = (entry: Entry | undefined): void => {
    if (entry?.kind === 'intent' && entry.action === 'write' && entry.request_id !== undefined)
      intents.set(entry.request_id, entry);
  };
  const files = [...chainFiles(paths, stored?.files).values()].flat();
  for (const file of files) {
    for (const line of chainFileText(file).split('\n')) {
      if (line === '') continue;
      const entry = JSON.parse(line) as Entry;
      if (entry.ts !== undefined) logStart = Math.min(logStart, Date.parse(entry.ts));
      if (entry.kind === 'request' && entry.request_id !== undefined)
        answered.add(entry.request_id);
      if (entry.kind === 'request' && entry.action === 'write' && entry.version !== undefined)
        written.add(`${keyOf(entry.namespace!, entry.key!)}\0${entry.version}`);
      addIntent(entry);
      if (entry.kind === 'event' && entry.event === 'audit.intent_recovered')
        addIntent(entry.intent);
    }
  }
  for (const copy of await intentCopies(storage, seal)) {
    const entry = copy.entry as Entry | null;
    if (entry === null) continue;
    if (typeof entry.ts === 'string') logStart = Math.min(logStart, Date.parse(entry.ts));
    addIntent(entry);
  }
  const open = new Map<string, number>();
  for (const intent of intents.values()) {
    if (answered.has(intent.request_id!)) continue;
    const name = keyOf(intent.namespace!, intent.key!);
    open.set(name, (open.get(name) ?? 0) + 1);
  }

  let [versions, byRequest, byIntent, beforeLog, uncoveredCount] = [0, 0, 0, 0, 0];
  const uncovered: StoredVersion[] = [];
  for await (const stored of storage.scan(VERSIONS_RANGE)) {
    versions++;
    const id = parseVersionKey(stored.key);
    const name = keyOf(id.namespace, id.key);
    if (written.has(`${name}\0${id.version}`)) {
      byRequest++;
      continue;
    }
    const createdAt = unpackVersion(stored.value)?.createdAt ?? Infinity;
    const openIntents = open.get(name) ?? 0;
    if (createdAt < logStart) beforeLog++;
    else if (openIntents > 0) {
      open.set(name, openIntents - 1);
      byIntent++;
    } else {
      uncoveredCount++;
      if (uncovered.length < MAX_LISTED) uncovered.push(id);
    }
  }
  return {
    versions,
    by_request: byRequest,
    by_intent: byIntent,
    before_log: beforeLog,
    uncovered_count: uncoveredCount,
    uncovered,
  };
}
