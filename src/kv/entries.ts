/** What the key-value service answers: an entry, a version list, a page of a namespace's values. */

import type { ValueType } from '../model/value-types.js';

export interface EntryInfo {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  readonly created_at: string;
}

/** A key's own metadata and how many versions it keeps (PATCH /v1/kv/{ns}/{key}). */
export interface KeyMetadata {
  readonly namespace: string;
  readonly key: string;
  readonly custom_metadata: Readonly<Record<string, string>>;
  readonly max_versions: number;
  /** Every write must name the version it replaces. */
  readonly cas_required: boolean;
  /** Each new version is deleted this many seconds after it is written (0: never). */
  readonly delete_version_after: number;
}

/** A change of a key's metadata: the map replaced when given, the limit and check-and-set set when given. */
export interface KeyMetadataChange {
  readonly custom_metadata?: Readonly<Record<string, string>>;
  readonly max_versions?: number;
  readonly cas_required?: boolean;
  /** Seconds (0: never). */
  readonly delete_version_after?: number;
}

/** A key's value: `kind` tells it from a listing where a path may name either (GET /v1/kv/{ns}/{key}). */
export interface Entry extends EntryInfo {
  readonly kind: 'entry';
  readonly value: string;
  /** The version is to be deleted then (its key's delete_version_after when it was written). */
  readonly deletes_at?: string;
}

export interface VersionList {
  readonly namespace: string;
  readonly key: string;
  readonly current_version: number;
  /**
   * The key is deleted (in the trash, or by its latest version's time) since then; its versions are kept
   * until it is destroyed.
   */
  readonly deleted_at?: string;
  /** The key's own metadata, and how many versions it keeps at the most (0: no limit). */
  readonly custom_metadata: Readonly<Record<string, string>>;
  readonly max_versions: number;
  readonly cas_required: boolean;
  /** Each new version is deleted this many seconds after it is written (0: never). */
  readonly delete_version_after: number;
  /**
   * Oldest first; a version deleted alone (or by its time) has `deleted_at`, one to be deleted at a time
   * still to come `deletes_at`, one destroyed alone `destroyed`.
   */
  readonly versions: {
    version: number;
    type: ValueType;
    created_at: string;
    deleted_at?: string;
    deletes_at?: string;
    destroyed?: true;
  }[];
}

/** What a delete, undelete or destroy of versions one by one did (`?versions=`). */
export interface VersionsChange {
  readonly namespace: string;
  readonly key: string;
  readonly action: 'delete' | 'undelete' | 'destroy';
  /** The versions it changed, oldest first: those already as asked, or not kept, are not named. */
  readonly versions: number[];
  /** The key after it: naming its latest version deletes it (undeleting: restores it). */
  readonly key_state: 'live' | 'deleted';
}

/** One page of a namespace's deleted keys (GET /v1/kv/{ns}/?trash=true): names and versions, no value. */
export interface TrashListing {
  readonly kind: 'trash';
  readonly namespace: string;
  readonly keys: { key: string; type: ValueType; version: number; deleted_at: string }[];
  readonly next_cursor: string | null;
}

/** One page of a namespace's values (GET /v1/kv/{ns}/?values=true). */
export interface NamespaceValues {
  readonly kind: 'values';
  readonly namespace: string;
  readonly values: (Omit<Entry, 'namespace' | 'kind'> & {
    /** The version's writer could read every value of the namespace (write-rights.ts, readsAll). */
    readonly writer_reads_all: boolean;
  })[];
  readonly next_cursor: string | null;
}

/** A page of values and its tag: what changes when a key of the namespace is written, added or deleted. */
export interface TaggedValues {
  readonly page: NamespaceValues;
  readonly tag: string;
}

let lastMs = Number.NaN;
let lastIso = '';

/**
 * A stored time as the API writes it. The last one is kept: reads of one version answer its time again and
 * again, and formatting it costs a read about 1% (490 ns measured).
 */
export function iso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
