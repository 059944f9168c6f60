/**
 * Which stored changes the audit log covers. Every stored version must be named by an audit entry: the
 * write's request entry (namespace, key, version), or — when the process was killed between the commit and
 * that entry — the write's intent entry, written before the commit and durable with it (audit/audit-log.ts
 * `intent`), whose request never got its own entry or was answered 503 `storage_unavailable` (its storage
 * could not say whether the write was made). An intent counts wherever it is: in its chain's file,
 * put back into the log by an `audit.intent_recovered` event, or still only in the store as the copy
 * committed with its change (audit/intent-journal.ts) when no server has started since a power loss. One
 * such open intent covers one version of its key. Versions created before the oldest entry in the log (an
 * older log, archived or from before the audit log existed) are counted apart.
 *
 * The same holds for the changes of tokens and of the keyring that the store holds: every token record
 * must be named by a `token.create` event (or its intent), every revocation — in the token's record or in
 * the keyring — by a `token.revoke` event (or its intent), and every keyring version after the first by a
 * `keyring.rotate` event naming it; a change in the store that the log does not name is reported.
 *
 * And the other way (`contradicted`): what the log says happened must still hold in the store — a token
 * the log revoked (its `token.revoke` event, written once the revocation committed) must not be active, and a
 * version the log says was written (its request entry, 2xx) must be stored unless a delete of its key was
 * answered after it. Someone who puts older records back (a token's record and the keyring from before a
 * revocation, an index and the versions after it) with the host's high-water marks deleted is found here.
 */
import type { Keyring } from '../crypto/keyring.js';
import type { AuditRecords } from '../store/audit-records.js';
import { unpackVersion } from '../store/kv-format.js';
import type { KvRecords } from '../store/kv-records.js';
import type { TokenRecords } from '../store/token-records.js';
import type { StoredChains } from './database-copy.js';
import { chainFiles, chainFileText } from './files.js';
import { intentCopies } from './intent-recovery.js';

const MAX_LISTED = 100;

/**
 * The request actions after which a key's earlier versions may be gone: a destroy (native or Vault's), and
 * a delete — which erased the versions until the trash came, and still counts for the logs written then.
 * An entry that names `versions` acted on those one by one: a destroy erased just them, anything else
 * erased nothing.
 */
const ERASING = new Set(['delete', 'destroy', 'vault.delete_metadata', 'vault.destroy']);

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
  /** What the log says happened that the store no longer holds (the first of each are listed). */
  readonly contradicted: {
    /** Tokens a `token.revoke` event names that the store holds as active. */
    readonly revoked_but_active: string[];
    /** Versions written (2xx) that are not stored, with no delete of their key answered after. */
    readonly writes_missing: (StoredVersion & { readonly request_id: string })[];
    /**
     * The store below what the log's checkpoints recorded of it (`high_water`): the keyring's generation,
     * the chains' count. Null where it is not.
     */
    readonly behind: {
      readonly generation: { readonly store: number; readonly logged: number } | null;
      readonly chains: { readonly store: number; readonly logged: number } | null;
    };
  };
  /** Token and keyring changes in the store, against the events that name them. */
  readonly changes: {
    readonly tokens_created: ChangeCoverage<string>;
    readonly tokens_revoked: ChangeCoverage<string>;
    readonly keyring_rotations: ChangeCoverage<number>;
  };
}

/** How many changes of a kind the store holds, how many the log names, and those it does not. */
export interface ChangeCoverage<T> {
  readonly count: number;
  readonly covered: number;
  /** Made before the oldest entry of the log read. */
  readonly before_log: number;
  /** The first ones no entry names (token ids, keyring versions). */
  readonly uncovered: T[];
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
  readonly pruned?: unknown;
  readonly versions?: unknown;
  readonly token_id?: string;
  readonly subject_token_id?: string;
  readonly also_revoked?: unknown;
  readonly active_version?: number;
  readonly outcome?: { readonly status?: number; readonly code?: string };
  readonly high_water?: { readonly generation?: unknown; readonly chains?: unknown };
}

const keyOf = (namespace: string, key: string): string => `${namespace}\0${key}`;

/** An answer that leaves the change's fate unknown: the storage could not say whether it was made. */
const unsure = (entry: Entry): boolean =>
  entry.outcome?.status === 503 && entry.outcome.code === 'storage_unavailable';

/** Coverage by the chains of `paths`, and with `stored` (shared storage) every other chain the store keeps. */
export async function auditCoverage(
  paths: readonly string[],
  store: {
    readonly kv: Pick<KvRecords, 'everyVersion'>;
    readonly audit: Pick<AuditRecords, 'intentCopies' | 'chainCount'>;
    readonly tokens: Pick<TokenRecords, 'list'>;
    readonly keyring: { current(): Keyring };
  },
  stored?: StoredChains,
): Promise<Coverage> {
  let logStart = Infinity;
  const written = new Set<string>();
  // For the other direction: each 2xx write (key, version, when, request) and each key's newest 2xx delete.
  const writes: { name: string; version: number; at: number; request_id: string }[] = [];
  const deleted = new Map<string, number>();
  /** Versions a later write pruned (max_versions), by key name and version. */
  const pruned = new Set<string>();
  const revokedEvents = new Set<string>();
  const logged = { generation: 0, chains: 0 };
  const answered = new Set<string>();
  // By request id: the same intent may be both in a file and in the store, or recovered twice.
  const intents = new Map<string, Entry>();
  // Token and keyring changes named by their events, or by a committed intent (its process stopped).
  const named = {
    created: new Set<string>(),
    revoked: new Set<string>(),
    rotated: new Set<number>(),
  };
  const addIntent = (entry: Entry | undefined): void => {
    if (entry?.kind !== 'intent' || entry.request_id === undefined) return;
    if (entry.action === 'write') intents.set(entry.request_id, entry);
    if (entry.action === 'token.create' && entry.subject_token_id !== undefined)
      named.created.add(entry.subject_token_id);
    if (entry.action === 'token.revoke' && entry.subject_token_id !== undefined)
      named.revoked.add(entry.subject_token_id);
    if (entry.action === 'token.revoke' && Array.isArray(entry.also_revoked))
      for (const id of entry.also_revoked) if (typeof id === 'string') named.revoked.add(id);
  };
  const addEvent = (entry: Entry): void => {
    if (entry.kind !== 'event') return;
    if (entry.event === 'token.create' && entry.token_id !== undefined)
      named.created.add(entry.token_id);
    if (entry.event === 'token.revoke' && entry.token_id !== undefined)
      named.revoked.add(entry.token_id);
    if (entry.event === 'keyring.rotate' && typeof entry.active_version === 'number')
      named.rotated.add(entry.active_version);
  };
  const files = [...chainFiles(paths, stored?.files).values()].flat();
  for (const file of files) {
    for (const line of chainFileText(file).split('\n')) {
      if (line === '') continue;
      const entry = JSON.parse(line) as Entry;
      if (entry.ts !== undefined) logStart = Math.min(logStart, Date.parse(entry.ts));
      // A write answered 503 storage_unavailable may have been made all the same (its storage could not
      // say: an LMDB flush unconfirmed, a PostgreSQL commit cut off): its intent stays open, as one cut off.
      if (entry.kind === 'request' && entry.request_id !== undefined && !unsure(entry))
        answered.add(entry.request_id);
      if (entry.kind === 'request' && entry.action === 'write' && entry.version !== undefined) {
        const name = keyOf(entry.namespace!, entry.key!);
        written.add(`${name}\0${entry.version}`);
        if (succeeded(entry))
          writes.push({
            name,
            version: entry.version,
            at: Date.parse(entry.ts ?? ''),
            request_id: entry.request_id ?? '',
          });
      }
      // A write beyond a key's max_versions names the versions it destroyed; so does a destroy of some.
      const destroyedAlone = /destroy$/.test(entry.action ?? '') ? entry.versions : undefined;
      for (const list of [entry.pruned, destroyedAlone])
        if (entry.kind === 'request' && Array.isArray(list) && succeeded(entry))
          for (const v of list) pruned.add(`${keyOf(entry.namespace!, entry.key!)}\0${v}`);
      if (
        entry.kind === 'request' &&
        ERASING.has(entry.action ?? '') &&
        !Array.isArray(entry.versions) &&
        succeeded(entry)
      ) {
        const name = keyOf(entry.namespace!, entry.key!);
        deleted.set(name, Math.max(deleted.get(name) ?? 0, Date.parse(entry.ts ?? '')));
      }
      if (entry.kind === 'event' && entry.event === 'token.revoke' && entry.token_id !== undefined)
        revokedEvents.add(entry.token_id);
      if (entry.kind === 'checkpoint' && entry.high_water) {
        const { generation, chains } = entry.high_water;
        if (typeof generation === 'number')
          logged.generation = Math.max(logged.generation, generation);
        if (typeof chains === 'number') logged.chains = Math.max(logged.chains, chains);
      }
      addIntent(entry);
      addEvent(entry);
      if (entry.kind === 'event' && entry.event === 'audit.intent_recovered')
        addIntent(entry.intent);
    }
  }
  for (const copy of await intentCopies(store.audit)) {
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
  const storedVersions = new Set<string>();
  for await (const stored of store.kv.everyVersion()) {
    versions++;
    const id = { namespace: stored.namespace, key: stored.key, version: stored.version };
    const name = keyOf(id.namespace, id.key);
    storedVersions.add(`${name}\0${id.version}`);
    if (written.has(`${name}\0${id.version}`)) {
      byRequest++;
      continue;
    }
    const createdAt = unpackVersion(stored.bytes)?.createdAt ?? Infinity;
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
  const writesMissing: Coverage['contradicted']['writes_missing'] = [];
  for (const w of writes) {
    if (writesMissing.length >= MAX_LISTED) break;
    if (storedVersions.has(`${w.name}\0${w.version}`)) continue;
    if (pruned.has(`${w.name}\0${w.version}`)) continue;
    // Deleted later (a delete answered in the same millisecond counts: two chains can interleave there).
    if ((deleted.get(w.name) ?? -Infinity) >= w.at) continue;
    const [namespace, key] = w.name.split('\0') as [string, string];
    writesMissing.push({ namespace, key, version: w.version, request_id: w.request_id });
  }
  return {
    versions,
    by_request: byRequest,
    by_intent: byIntent,
    before_log: beforeLog,
    uncovered_count: uncoveredCount,
    uncovered,
    contradicted: {
      revoked_but_active: await revokedButActive(store, revokedEvents),
      writes_missing: writesMissing,
      behind: await behindTheLog(store, logged),
    },
    changes: await changeCoverage(store, named, logStart),
  };
}

/** The store's keyring generation and chain count, where they are below what the log recorded of them. */
async function behindTheLog(
  store: {
    readonly audit: Pick<AuditRecords, 'chainCount'>;
    readonly keyring: { current(): Keyring };
  },
  logged: { readonly generation: number; readonly chains: number },
): Promise<Coverage['contradicted']['behind']> {
  const epoch = store.keyring.current().epoch;
  const count = await store.audit.chainCount();
  return {
    generation:
      epoch !== undefined && epoch < logged.generation
        ? { store: epoch, logged: logged.generation }
        : null,
    chains: count < logged.chains ? { store: count, logged: logged.chains } : null,
  };
}

/** A request entry that says the change was made: a 2xx answer, delivered or not. */
function succeeded(entry: Entry): boolean {
  const status = entry.outcome?.status;
  return typeof status === 'number' && status >= 200 && status < 300;
}

/**
 * Tokens a `token.revoke` event names whose record the store holds as active, with no revocation in the
 * keyring either. (A record gone — purged by the tidy after it expired — contradicts nothing.)
 */
async function revokedButActive(
  store: { readonly tokens: Pick<TokenRecords, 'list'>; readonly keyring: { current(): Keyring } },
  revoked: ReadonlySet<string>,
): Promise<string[]> {
  if (revoked.size === 0) return [];
  const revocations = store.keyring.current().revocations();
  const active: string[] = [];
  for (const t of await store.tokens.list())
    if (revoked.has(t.id) && t.revokedAt === null && !revocations.has(t.id)) active.push(t.id);
  return active.slice(0, MAX_LISTED);
}

/** The store's token and keyring changes against the events (or intents) that name them. */
async function changeCoverage(
  store: { readonly tokens: Pick<TokenRecords, 'list'>; readonly keyring: { current(): Keyring } },
  named: { created: Set<string>; revoked: Set<string>; rotated: Set<number> },
  logStart: number,
): Promise<Coverage['changes']> {
  const tokens = await store.tokens.list();
  const keyring = store.keyring.current();
  const revoked = new Map<string, number>();
  for (const t of tokens) if (t.revokedAt !== null) revoked.set(t.id, t.revokedAt);
  for (const [id, r] of keyring.revocations()) revoked.set(id, r.revokedAt);
  return {
    tokens_created: covering(
      tokens.map((t) => [t.id, t.createdAt] as const),
      named.created,
      logStart,
    ),
    tokens_revoked: covering([...revoked], named.revoked, logStart),
    keyring_rotations: covering(
      keyring
        .versions()
        .filter((v) => v.version > 1)
        .map((v) => [v.version, v.createdAt] as const),
      named.rotated,
      logStart,
    ),
  };
}

function covering<T>(
  changes: readonly (readonly [T, number])[],
  named: ReadonlySet<T>,
  logStart: number,
): ChangeCoverage<T> {
  let [covered, beforeLog] = [0, 0];
  const uncovered: T[] = [];
  for (const [what, at] of changes) {
    if (named.has(what)) covered++;
    else if (at < logStart) beforeLog++;
    else if (uncovered.length < MAX_LISTED) uncovered.push(what);
  }
  return { count: changes.length, covered, before_log: beforeLog, uncovered };
}
