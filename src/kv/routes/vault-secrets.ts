/**
 * A Vault KV v2 secret as Coffer keeps it (routes/vault-kv.ts): its JSON object as a key's value, the write
 * Vault's clients send, the metadata of a version, and the merge patch and subkeys made of it.
 */
import type { Entry } from '../entries.js';
import { MAX_VERSION } from './kv-path.js';

/** A write as Vault's clients send it (writeSchema). */
export interface VaultWrite {
  readonly data: Record<string, unknown>;
  readonly options?: { readonly cas?: number };
}

/** Vault's KV v2 write: the secret and, optionally, the version it must replace (0: none yet). */
export const writeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['data'],
  properties: {
    data: { type: 'object', description: "the secret's fields" },
    options: {
      type: 'object',
      additionalProperties: false,
      properties: { cas: { type: 'integer', minimum: 0, maximum: MAX_VERSION } },
    },
  },
} as const;

/** How deep `subkeysOf` goes: a stored value may nest deeper than any request body may (32). */
export const SUBKEYS_DEPTH = 32;

/**
 * A secret's shape without its values: each field, null unless it holds an object (then its subkeys).
 * Objects below SUBKEYS_DEPTH levels are shown as null, so no stored value walks the stack.
 */
export function subkeysOf(
  secret: Record<string, unknown>,
  depth = SUBKEYS_DEPTH,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(secret).map(([name, value]) => [
      name,
      depth > 1 && value !== null && typeof value === 'object' && !Array.isArray(value)
        ? subkeysOf(value as Record<string, unknown>, depth - 1)
        : null,
    ]),
  );
}

/**
 * RFC 7396: `patch`'s fields over `target`'s; null removes a field, objects merge, anything else replaces.
 * It recurses only where the patch has an object, so no deeper than a request body may nest (32).
 */
export function mergePatch(
  target: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete out[name];
    else if (typeof value === 'object' && !Array.isArray(value)) {
      const under = out[name];
      out[name] = mergePatch(
        under !== null && typeof under === 'object' && !Array.isArray(under)
          ? (under as Record<string, unknown>)
          : {},
        value as Record<string, unknown>,
      );
    } else out[name] = value;
  }
  return out;
}

/** Vault's metadata of one version, as its KV v2 answers carry it. */
export function versionMetadata(
  info: { version: number; created_at: string },
  deletedAt = '',
  destroyed = false,
) {
  return {
    created_time: info.created_at,
    custom_metadata: null,
    deletion_time: deletedAt,
    destroyed,
    version: info.version,
  };
}

/** Vault's delete, undelete and destroy of versions: which ones (Coffer acts on the key: vault-kv.ts). */
export interface VaultVersions {
  readonly versions: readonly number[];
}

export const versionsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['versions'],
  properties: {
    versions: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      items: { type: 'integer', minimum: 1, maximum: MAX_VERSION },
      description: 'the versions to act on',
    },
  },
} as const;

/**
 * The secret a Coffer value holds: its JSON object; a value that is not one (written through Coffer's own
 * API) is shown as `{"value": "<the value>"}`.
 */
export function secretOf(entry: Entry): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(entry.value);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // Not JSON: shown as one field.
  }
  return { value: entry.value };
}
