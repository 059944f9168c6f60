/**
 * The seal report: whether every stored version is sealed as it should be, found by reading the stored
 * records' structure, without decrypting anything.
 *
 * A secret-typed version must carry exactly: format, type, time, keyring version, the wrapped data key and
 * its nonce, the value's ciphertext and its nonce, with the right lengths, and a keyring version the
 * keyring holds; any other field (a plaintext one above all) is an anomaly. A config-typed version is
 * stored readable by design and must carry its HMAC and keyring version. Every version must belong to a
 * live key (deleting a key deletes its versions). Counts are given per keyring version and per namespace.
 *
 * With `verify`, each record is also opened in memory (a secret decrypted, a config MAC checked) and the
 * result dropped: this proves integrity, and no value leaves this module.
 *
 * The store's own records (tokens, the root token, the audit chain registry, intent copies) are counted by
 * kind: opened with `verify`, else checked for the sealed form (store/record-census.ts).
 */
import { Packr } from 'msgpackr';
import { NONCE_BYTES } from '../crypto/aead.js';
import { openSecret, type RecordIdentity, verifyConfig } from '../crypto/envelope.js';
import type { Keyring } from '../crypto/keyring.js';
import type { StorageBackend } from '../storage/backend.js';
import { type KeyMeta, peekMeta, recordIdentity, unpackVersion } from './kv-format.js';
import { metaKey, parseVersionKey, trashKey, VERSIONS_RANGE } from './layout.js';
import { type RecordCount, recordCensus } from './record-census.js';
import { RecordSeal } from './record-seal.js';
import { emptyCounts, type RecordCounts, versionRows } from './version-counts.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A wrapped 32-byte data key: the key plus the 16-byte Poly1305 tag. */
const WRAPPED_KEY_BYTES = 32 + 16;
const TAG_BYTES = 16;
const MAC_BYTES = 32;
// `w`: the writer could read every value of the namespace (bound into the AAD or MAC, not a secret).
const SECRET_FIELDS = new Set(['f', 't', 'at', 'kv', 'wn', 'wk', 'n', 'c', 'w']);
const CONFIG_FIELDS = new Set(['f', 't', 'at', 'kv', 'v', 'm', 'w']);
const MAX_LISTED = 1000;

export interface Anomaly {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly problem: string;
}

export interface SealReport {
  readonly generated_at: string;
  readonly verified: boolean;
  readonly totals: {
    readonly versions: number;
    readonly secrets: number;
    readonly configs: number;
    /** Secret versions whose structure is sealed (and, with verify, that opened). */
    readonly sealed_secrets: number;
    readonly anomalies: number;
    /** The store's own records that failed their check (`records`). */
    readonly record_failures: number;
  };
  /** Without the keyring (a structure-only report made without the master key), times and `active` are null. */
  readonly keyring: {
    readonly active_version: number | null;
    readonly versions: readonly {
      version: number;
      created_at: string | null;
      active: boolean | null;
      secrets: number;
      configs: number;
    }[];
  };
  readonly namespaces: readonly { namespace: string; secrets: number; configs: number }[];
  /** The first 1000 anomalies, in storage order; `totals.anomalies` counts them all. */
  readonly anomalies: readonly Anomaly[];
  /** The store's own records by kind. */
  readonly records: readonly RecordCount[];
}

export interface SealReportOptions {
  readonly verify: boolean;
  readonly now: number;
  /** Called every few hundred records with (examined, total); total is counted first when this is given. */
  readonly onProgress?: (examined: number, total: number) => void;
}

const bytes = (value: unknown, length?: number, min = 1): boolean =>
  value instanceof Uint8Array &&
  (length === undefined ? value.length >= min : value.length === length);

/** What is wrong with one record's structure, or null when it is sealed as its type requires. */
function structuralProblem(
  record: Record<string, unknown>,
  keyring: Keyring | null,
): string | null {
  if (record.f !== 1) return `unknown record format ${JSON.stringify(record.f ?? null)}`;
  if (typeof record.at !== 'number') return 'no creation time';
  if (record.t === 'secret') {
    if ('v' in record) return 'PLAINTEXT: a secret-typed version carries a value field';
    const extra = Object.keys(record).filter((f) => !SECRET_FIELDS.has(f));
    if (extra.length > 0) return `unexpected field(s) ${extra.join(', ')} in a sealed secret`;
    if (!bytes(record.c, undefined, TAG_BYTES)) return 'no ciphertext (or shorter than its tag)';
    if (!bytes(record.n, NONCE_BYTES))
      return `the value's nonce is missing or not ${NONCE_BYTES} bytes`;
    if (!bytes(record.wk, WRAPPED_KEY_BYTES))
      return `the wrapped data key is missing or not ${WRAPPED_KEY_BYTES} bytes`;
    if (!bytes(record.wn, NONCE_BYTES))
      return `the data key's nonce is missing or not ${NONCE_BYTES} bytes`;
  } else if (record.t === 'config') {
    const extra = Object.keys(record).filter((f) => !CONFIG_FIELDS.has(f));
    if (extra.length > 0) return `unexpected field(s) ${extra.join(', ')} in a config version`;
    if (typeof record.v !== 'string') return 'a config version without its value';
    if (!bytes(record.m, MAC_BYTES)) return `the config MAC is missing or not ${MAC_BYTES} bytes`;
  } else {
    return `unknown type ${JSON.stringify(record.t ?? null)}`;
  }
  if (typeof record.kv !== 'number') return 'no keyring version';
  if (keyring !== null && !keyring.has(record.kv))
    return `keyring version ${record.kv} is not in the keyring (retired or never existed)`;
  return null;
}

/** Opens the record in memory and drops the result; the problem when it does not open. */
function integrityProblem(
  bytesRead: Uint8Array,
  id: Omit<RecordIdentity, 'type'>,
  keyring: Keyring,
): string | null {
  const record = unpackVersion(bytesRead);
  if (!record) return 'does not parse as a version record';
  try {
    const identity = recordIdentity(id, record);
    if (record.type === 'secret') openSecret(keyring, identity, record.sealed);
    else verifyConfig(keyring, identity, record.value, record.seal);
    return null;
  } catch {
    return record.type === 'secret'
      ? 'INTEGRITY: does not decrypt (altered, moved, or sealed under another key)'
      : 'INTEGRITY: the config MAC does not verify (altered or moved)';
  }
}

/**
 * The report. `keyring` null makes a structure-only report without the master key: everything but whether
 * each record's keyring version is still in the keyring (and no `verify`, which opens records).
 */
export async function sealReport(
  storage: StorageBackend,
  keyring: Keyring | null,
  options: SealReportOptions,
): Promise<SealReport> {
  if (keyring === null && options.verify) throw new Error('opening every record needs the keyring');
  let total = 0;
  if (options.onProgress) for await (const _ of storage.scan(VERSIONS_RANGE)) total++;

  const byVersion = keyring === null ? new Map<number, RecordCounts>() : emptyCounts(keyring);
  const byNamespace = new Map<string, RecordCounts>();
  const anomalies: Anomaly[] = [];
  let anomalyCount = 0;
  let [versions, secrets, configs, sealed] = [0, 0, 0, 0];
  let currentKey: string | null = null;
  let meta: KeyMeta | undefined;

  for await (const entry of storage.scan(VERSIONS_RANGE)) {
    versions++;
    const id = parseVersionKey(entry.key);
    const note = (problem: string): void => {
      anomalyCount++;
      if (anomalies.length < MAX_LISTED) anomalies.push({ ...id, problem });
    };
    const keyName = `${id.namespace}\0${id.key}`;
    if (keyName !== currentKey) {
      currentKey = keyName;
      // A deleted key's versions are counted by its record in the trash, which keeps its index as it was.
      const metaBytes =
        (await storage.get(metaKey(id.namespace, id.key))) ??
        (await storage.get(trashKey(id.namespace, id.key)));
      // Read, not checked: the census below checks every index and trash record's MAC (with verify).
      meta = metaBytes && peekMeta(metaBytes);
    }

    let record: Record<string, unknown> | undefined;
    try {
      const unpacked: unknown = packr.unpack(entry.value);
      if (unpacked !== null && typeof unpacked === 'object' && !Array.isArray(unpacked))
        record = unpacked as Record<string, unknown>;
    } catch {
      // reported below
    }
    const type = record?.t === 'secret' ? 'secret' : record?.t === 'config' ? 'config' : null;
    if (type === 'secret') secrets++;
    if (type === 'config') configs++;
    if (type !== null) {
      const ns = byNamespace.get(id.namespace) ?? { secrets: 0, configs: 0 };
      ns[type === 'secret' ? 'secrets' : 'configs']++;
      byNamespace.set(id.namespace, ns);
      if (keyring === null && typeof record!.kv === 'number' && !byVersion.has(record!.kv))
        byVersion.set(record!.kv, { secrets: 0, configs: 0 });
      const perVersion = typeof record!.kv === 'number' ? byVersion.get(record!.kv) : undefined;
      if (perVersion) perVersion[type === 'secret' ? 'secrets' : 'configs']++;
    }

    const problem = record
      ? (structuralProblem(record, keyring) ??
        (options.verify && keyring !== null ? integrityProblem(entry.value, id, keyring) : null))
      : 'unreadable: not a packed record';
    if (problem) note(problem);
    else if (type === 'secret') sealed++;
    if (!meta || id.version < meta.first || id.version > meta.latest)
      note(
        'a version of no key, live or deleted (its key is destroyed, or the version lies outside it)',
      );

    if (versions % 500 === 0) {
      options.onProgress?.(versions, Math.max(total, versions));
      // Let a server answer other requests during a long scan.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  options.onProgress?.(versions, Math.max(total, versions));

  const records = await recordCensus(
    storage,
    options.verify && keyring !== null ? new RecordSeal(() => keyring.recordKeys()) : null,
  );
  return {
    generated_at: new Date(options.now).toISOString(),
    verified: options.verify,
    totals: {
      versions,
      secrets,
      configs,
      sealed_secrets: sealed,
      anomalies: anomalyCount,
      record_failures: records.reduce((n, r) => n + r.failed, 0),
    },
    keyring:
      keyring === null
        ? {
            active_version: null,
            versions: [...byVersion]
              .sort(([a], [b]) => a - b)
              .map(([version, counts]) => ({ version, created_at: null, active: null, ...counts })),
          }
        : { active_version: keyring.activeVersion, versions: versionRows(keyring, byVersion) },
    namespaces: [...byNamespace].map(([namespace, counts]) => ({ namespace, ...counts })),
    anomalies,
    records,
  };
}
