/**
 * What the API answers: one declaration per shape, with typebox, so that the JSON Schema the OpenAPI document
 * publishes and the TypeScript type of the answer (`Static<typeof …>`, exported below as `Api…`) are the
 * same object. Every object lists what is always there (`required`) and is closed
 * (`additionalProperties: false`), except an audit entry, whose fields depend on what it records. A field
 * sent only sometimes is optional and its description says when. The schemas of what the API accepts are in
 * schemas.ts, where the server validates with them.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { ERROR_CODES } from '../errors.js';
import { PRIVILEGES } from '../model/policies.js';
import { VALUE_TYPES } from '../model/value-types.js';

export const json = (schema: object) => ({ content: { 'application/json': { schema } } });
export const ok = (description: string, schema: object) => ({ description, ...json(schema) });

/** A closed object: what `properties` names, no more. */
const closed = <P extends Record<string, TSchema>>(properties: P, description?: string) =>
  Type.Object(properties, {
    additionalProperties: false,
    ...(description === undefined ? {} : { description }),
  });
const nullable = <S extends TSchema>(schema: S) => Type.Union([schema, Type.Null()]);
/** One of `values`, published as an enum (which client generators turn into a union or an enum type). */
const literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({
    type: 'string',
    enum: [...values],
    ...(description === undefined ? {} : { description }),
  });

export const timestamp = Type.String({ format: 'date-time' });
export const valueTypes = literals(VALUE_TYPES);
const count = Type.Integer({ minimum: 0 });

const scope = closed({ namespace: Type.String(), read: Type.Boolean(), write: Type.Boolean() });

// Typed as the map it is: TypeBox's static type would drop the free fields.
/** A key's own metadata: free string fields (PATCH /v1/kv/{ns}/{key} sets them). */
const keyFields = Type.Unsafe<Record<string, string>>(
  Type.Object(
    {},
    {
      additionalProperties: Type.String(),
      description: "Map: the key's own metadata, free string fields (PATCH sets them)",
    },
  ),
);

const metadata = Type.Unsafe<{
  name?: string;
  description?: string;
  [field: string]: string | undefined;
}>(
  Type.Object(
    {
      name: Type.Optional(Type.String()),
      description: Type.Optional(Type.String()),
    },
    {
      additionalProperties: Type.String(),
      description:
        "Map: what the token's creator said of it (free string fields; a login's claims_to_metadata); each field only when it was given",
    },
  ),
);

const tokenLogin = closed(
  { role: Type.String(), issuer: Type.String(), subject: Type.String() },
  'The login role, issuer and subject of the JWT login that bought the token',
);

export const token = closed({
  id: Type.String(),
  role: nullable(Type.String()),
  scopes: nullable(Type.Array(scope)),
  metadata,
  created_at: timestamp,
  expires_at: timestamp,
  status: Type.Optional(
    literals(
      ['active', 'revoked', 'expired', 'role_deleted'] as const,
      'in a listing only; role_deleted: neither revoked nor expired, but its role (or the login role that made it) was deleted, so every use is refused: revoke it',
    ),
  ),
  parent: Type.Optional(
    Type.String({ description: 'the token that created it (create_tokens); revoked with it' }),
  ),
  login: Type.Optional(tokenLogin),
});

export const createdToken = closed({
  ...Type.Omit(token, ['status']).properties,
  token: Type.String({ description: 'the token itself: shown only in this answer' }),
  expires_in: Type.Integer({ description: 'seconds' }),
});

export const tokenList = closed({ tokens: Type.Array(token) });

export const oidcStart = closed({
  auth_url: Type.String({
    description:
      "the provider's authorization address, for the person's browser; it comes back to redirect_uri with code and state",
  }),
});

export type ApiOidcStart = Static<typeof oidcStart>;

export const consoleSession = closed({
  signed_in: Type.Boolean({ description: 'false: no live session (the other fields are absent)' }),
  csrf: Type.Optional(
    Type.String({ description: 'send it as X-Coffer-CSRF with every call that changes something' }),
  ),
  token_id: Type.Optional(
    Type.String({ description: 'the token the session acts as (root for the root token)' }),
  ),
  role: Type.Optional(Type.String({ description: 'root, the role, or scoped' })),
  is_root: Type.Optional(Type.Boolean()),
  via: Type.Optional(literals(['token', 'oidc'] as const)),
  expires_at: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'the latest the session lasts (sign-in + COFFER_CONSOLE_MAX_LIFETIME, never past its token)',
    }),
  ),
  idle_timeout_seconds: Type.Optional(
    Type.Integer({ description: 'it ends after this long unused' }),
  ),
});

export type ApiConsoleSession = Static<typeof consoleSession>;

const capability = closed({
  namespace: Type.String({ description: '*, a namespace, or a namespace followed by /*' }),
  actions: Type.Array(literals(['read', 'list', 'write', 'delete', 'manage_tokens'] as const)),
  types: Type.Array(valueTypes),
});

export const self = closed({
  id: Type.String(),
  is_root: Type.Boolean(),
  role: nullable(Type.String()),
  scopes: nullable(Type.Array(scope)),
  metadata,
  expires_at: nullable(timestamp),
  capabilities: Type.Array(capability),
  privileges: Type.Array(literals(PRIVILEGES)),
});

const entryFields = {
  namespace: Type.String(),
  key: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  type: valueTypes,
  created_at: timestamp,
  deletes_at: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        "the version is to be deleted then (its key's delete_version_after when it was written)",
    }),
  ),
};
export const entryInfo = closed(entryFields);
/** What tells the answers apart where one path may give either (their `oneOf`'s discriminator). */
const kindOf = <K extends string>(kind: K) =>
  literals([kind], `always "${kind}": tells this answer from the others its path may give`);

/** A `oneOf` of answers told apart by their `kind` (each schema's name in components/schemas). */
export const oneOfKinds = (kinds: Record<string, [schema: object, name: string]>) => ({
  oneOf: Object.values(kinds).map(([schema]) => schema),
  discriminator: {
    propertyName: 'kind',
    mapping: Object.fromEntries(
      Object.entries(kinds).map(([kind, [, name]]) => [kind, `#/components/schemas/${name}`]),
    ),
  },
});

export const entry = closed({ kind: kindOf('entry'), ...entryFields, value: Type.String() });

export const listing = closed({
  kind: kindOf('listing'),
  namespace: Type.String(),
  keys: Type.Array(Type.String()),
  namespaces: Type.Array(Type.String()),
  next_cursor: nullable(Type.String({ description: 'null on the last page' })),
  details: Type.Optional(
    Type.Array(
      closed({ key: Type.String(), ...Type.Omit(entryInfo, ['namespace', 'key']).properties }),
      {
        description:
          "with details=true: each listed key's latest version, its type and when it was written, in the order of keys (no value); a key deleted meanwhile is left out",
      },
    ),
  ),
});

const namespaceValue = closed({
  ...Type.Omit(entry, ['namespace', 'kind']).properties,
  writer_reads_all: Type.Boolean({
    description:
      'whether the version was written by a token that could read every value of the namespace, both types (recorded with the version, under its seal): coffer run and coffer export let only such a value take a variable of its own name (false for versions written before 2026-12-08)',
  }),
});

export const namespaceValues = closed({
  kind: kindOf('values'),
  namespace: Type.String(),
  values: Type.Array(namespaceValue, {
    description:
      'the latest value of each key directly in the namespace that the caller may read, in key order; keys of a type the caller may not read are left out without a word',
  }),
  next_cursor: nullable(Type.String({ description: 'null on the last page' })),
});

const deleteVersionAfter = Type.Integer({
  description: 'each new version is deleted this many seconds after it is written; 0: never',
});

export const keyMetadata = closed({
  namespace: Type.String(),
  key: Type.String(),
  custom_metadata: keyFields,
  max_versions: Type.Integer({ description: 'versions kept at the most; 0: no limit' }),
  cas_required: Type.Boolean({ description: 'every write must name the version it replaces' }),
  delete_version_after: deleteVersionAfter,
});

export const trashListing = closed({
  kind: kindOf('trash'),
  namespace: Type.String(),
  keys: Type.Array(
    closed({
      key: Type.String(),
      type: valueTypes,
      version: Type.Integer({ description: 'its latest version when it was deleted' }),
      deleted_at: timestamp,
    }),
  ),
  next_cursor: nullable(Type.String({ description: 'null on the last page' })),
});

export const versionsChange = closed({
  namespace: Type.String(),
  key: Type.String(),
  action: literals(['delete', 'undelete', 'destroy'] as const),
  versions: Type.Array(Type.Integer(), {
    description:
      'the versions changed, oldest first: those already as asked, or not kept, are not named',
  }),
  key_state: literals(['live', 'deleted'] as const),
});

export const versionList = closed({
  namespace: Type.String(),
  key: Type.String(),
  current_version: Type.Integer(),
  /** Present when the key is deleted (in the trash, or by its latest version's time): when. */
  deleted_at: Type.Optional(timestamp),
  custom_metadata: keyFields,
  max_versions: Type.Integer({ description: 'versions kept at the most; 0: no limit' }),
  cas_required: Type.Boolean({ description: 'every write must name the version it replaces' }),
  delete_version_after: deleteVersionAfter,
  versions: Type.Array(
    closed({
      version: Type.Integer(),
      type: valueTypes,
      created_at: timestamp,
      deleted_at: Type.Optional(
        Type.String({
          format: 'date-time',
          description:
            'the version is deleted alone, or by its time (not read until undeleted): when',
        }),
      ),
      deletes_at: Type.Optional(
        Type.String({
          format: 'date-time',
          description: 'the version is to be deleted then (delete_version_after)',
        }),
      ),
      destroyed: Type.Optional(
        Type.Literal(true, { description: 'the version is destroyed alone: its value is gone' }),
      ),
    }),
  ),
});

const recordCounts = { secrets: count, configs: count };

export const keyringStatus = closed({
  provider: Type.String(),
  wrapped_by: Type.String({ description: 'the master key wrapping the keyring, in words' }),
  migrations: count,
  migrated_at: nullable(timestamp),
  active_version: Type.Integer(),
  generation: Type.Integer(),
  versions: Type.Array(
    closed({
      version: Type.Integer(),
      created_at: timestamp,
      active: Type.Boolean(),
      ...recordCounts,
    }),
  ),
  unreadable: Type.Integer({
    description: 'records whose keyring version is not in the keyring, or that do not parse',
  }),
});

export const rotation = closed({
  previous_version: Type.Integer(),
  active_version: Type.Integer(),
});
export const retirement = closed({
  retired: Type.Array(Type.Integer()),
  versions: Type.Array(Type.Integer()),
});
export const migration = closed({
  from: Type.String(),
  to: Type.String(),
  provider: Type.String(),
  migrated_at: nullable(timestamp),
});

export const rewrapView = closed({
  running: Type.Boolean(),
  target_version: nullable(Type.Integer()),
  total: count,
  examined: count,
  rewrapped: count,
  failed: count,
  started_at: nullable(timestamp),
  updated_at: nullable(timestamp),
  finished_at: nullable(timestamp),
});

/** The scheduled snapshots: the schedule, and the snapshots its directory holds, newest first. */
export const snapshotList = closed({
  scheduled: Type.Boolean({
    description: 'whether the server takes scheduled snapshots (COFFER_SNAPSHOT_DIR, _EVERY)',
  }),
  every: nullable(Type.String({ description: 'the interval, as configured (`6h`)' })),
  keep: nullable(count),
  next_at: nullable(timestamp),
  snapshots: Type.Array(
    closed({
      name: Type.String(),
      taken_at: Type.String({
        format: 'date-time',
        description: "the state it holds: its interval's start",
      }),
      written_at: timestamp,
      bytes: count,
    }),
  ),
});

/** An audit entry: its place in its chain, its kind, and what that kind records. */
export const auditEntry = Type.Object(
  {
    seq: Type.Integer(),
    chain: Type.String(),
    ts: timestamp,
    prev: Type.String(),
    kind: literals(['request', 'intent', 'event'] as const),
  },
  {
    additionalProperties: true,
    description:
      "Open: besides its head, an entry holds what its kind records (docs/audit.md lists the fields: a request's request_id, token_id, role, client, method, route, namespace, key, version, action, outcome ({status, code}), duration_ms; an event's name and details). Never a value or a token",
  },
);

export const auditPage = closed({
  entries: Type.Array(auditEntry),
  next_cursor: nullable(Type.String({ description: 'null on the last page' })),
});

const changeCoverage = <T extends TSchema>(item: T) =>
  closed({
    count,
    covered: count,
    before_log: count,
    uncovered: Type.Array(item, { description: 'the first ones no entry names' }),
  });

const coverage = closed(
  {
    versions: count,
    by_request: count,
    by_intent: count,
    before_log: count,
    uncovered_count: count,
    uncovered: Type.Array(
      closed({ namespace: Type.String(), key: Type.String(), version: Type.Integer() }),
    ),
    contradicted: closed({
      revoked_but_active: Type.Array(Type.String(), {
        description: 'tokens a token.revoke event names that the store holds as active',
      }),
      writes_missing: Type.Array(
        closed({
          namespace: Type.String(),
          key: Type.String(),
          version: Type.Integer(),
          request_id: Type.String(),
        }),
        {
          description:
            'versions the log says were written (2xx) that are not stored, with no delete of their key answered after',
        },
      ),
      behind: closed({
        generation: nullable(
          closed({ store: Type.Integer(), logged: Type.Integer() }, 'the keyring generation'),
        ),
        chains: nullable(
          closed({ store: Type.Integer(), logged: Type.Integer() }, 'the audit chains counted'),
        ),
      }),
    }),
    changes: closed({
      tokens_created: changeCoverage(Type.String()),
      tokens_revoked: changeCoverage(Type.String()),
      keyring_rotations: changeCoverage(Type.Integer()),
    }),
  },
  'Which stored versions and changes the log names',
);

const archived = closed(
  {
    files: count,
    entries: count,
    chains: count,
    last_ts: nullable(timestamp),
    to: Type.Array(Type.String(), { description: 'where they went, as recorded' }),
  },
  'Files archived away (coffer audit archive), as the log records them',
);

const publicKeyHex = Type.String({ description: 'the key that signs the checkpoints (hex)' });

export const verification = Type.Union(
  [
    closed(
      {
        intact: Type.Literal(true),
        entries: count,
        chains: count,
        files: count,
        first: nullable(timestamp),
        last: nullable(timestamp),
        uncheckpointed: Type.Integer({
          description: 'entries of running servers not yet covered by a checkpoint',
        }),
        archived,
        coverage,
        public_key: publicKeyHex,
      },
      'The log is intact',
    ),
    closed(
      {
        intact: Type.Literal(false),
        file: Type.String({ description: 'the file of the first broken entry, by name' }),
        line: Type.Integer(),
        seq: nullable(Type.Integer()),
        reason: Type.String(),
        public_key: publicKeyHex,
      },
      'The log is broken: where first, and why',
    ),
  ],
  { description: 'Told apart by intact' },
);

/** The store's register of audit chains (operator/chain-report.ts). */
export const auditChains = closed({
  count: Type.Integer({
    minimum: 0,
    description: "how many chains the store's count says were started",
  }),
  host_seen: nullable(
    Type.Integer({
      description:
        'the greatest count this host has seen (null where it keeps none): above count, the store went back',
    }),
  ),
  chains: Type.Array(
    closed({
      chain: Type.String(),
      ordinal: nullable(
        Type.Integer({ description: 'its place in the count; null for a chain of format 1' }),
      ),
      format: Type.Union([Type.Literal(1), Type.Literal(2)]),
      started_at: nullable(timestamp),
      writer: nullable(closed({ host: Type.String(), pid: Type.Integer() })),
      closed: nullable(
        closed({
          seq: Type.Integer(),
          at: timestamp,
          by: Type.String({
            description: 'close (its own stop), or the chain of the start that closed it',
          }),
        }),
      ),
      last_checkpoint_seq: nullable(Type.Integer()),
      damaged: Type.Boolean({ description: 'the record failed its integrity check' }),
    }),
    { description: 'format 1 first, then in ordinal order' },
  ),
  missing_ordinals: Type.Array(Type.Integer(), {
    description: 'ordinals up to count that no chain record holds: records put back or deleted',
  }),
});

export const auditPublicKey = closed({
  algorithm: Type.Literal('Ed25519'),
  public_key: Type.String({ description: '32 bytes, hex' }),
  fingerprint: Type.String({
    description: 'the first 16 hex digits of its SHA-256, to compare by eye',
  }),
});

export const sealReport = closed({
  generated_at: timestamp,
  verified: Type.Boolean({ description: 'every record was also opened in memory (verify=true)' }),
  totals: closed({
    versions: count,
    secrets: count,
    configs: count,
    sealed_secrets: count,
    anomalies: count,
    record_failures: count,
  }),
  keyring: closed({
    active_version: nullable(Type.Integer()),
    versions: Type.Array(
      closed({
        version: Type.Integer(),
        created_at: nullable(timestamp),
        active: nullable(Type.Boolean()),
        ...recordCounts,
      }),
    ),
  }),
  namespaces: Type.Array(closed({ namespace: Type.String(), ...recordCounts })),
  anomalies: Type.Array(
    closed({
      namespace: Type.String(),
      key: Type.String(),
      version: Type.Integer(),
      problem: Type.String(),
    }),
    { description: 'the first 1000, in storage order; totals.anomalies counts them all' },
  ),
  records: Type.Array(closed({ kind: Type.String(), records: count, failed: count }), {
    description:
      "the store's own records by kind (root-token, token, audit-chain, intent-copy, ...) and how many failed their check",
  }),
});

export const serverVersion = closed({
  version: Type.String({ description: 'the release, as package.json names it' }),
  commit: nullable(
    Type.String({
      description: 'the commit the build came from; null when built outside a git checkout',
    }),
  ),
  modified: Type.Boolean({ description: 'built from a checkout with uncommitted changes' }),
});

export const healthReport = closed({
  status: literals(['ok', 'unavailable'] as const),
  storage: closed({
    backend: Type.String(),
    reachable: Type.Boolean(),
    latency_ms: nullable(Type.Number({ description: "the check's read; null when it failed" })),
  }),
  audit: closed({
    writable: Type.Boolean(),
    disk_low: Type.Boolean(),
    streams_down: Type.Integer({
      minimum: 0,
      description:
        'audit streams not taking lines now (COFFER_AUDIT_STREAMS); their lines wait, in order',
    }),
  }),
});

export const problem = closed({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: literals(ERROR_CODES),
  errors: Type.Optional(
    Type.Array(closed({ field: Type.String(), in: Type.String(), message: Type.String() }), {
      description: 'on a 400: what was wrong, field by field',
    }),
  ),
  health: Type.Optional(healthReport),
  current_version: Type.Optional(
    Type.Integer({
      description: "on a 412: the key's latest version now (0: it does not exist)",
    }),
  ),
  deleted_at: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'on a 404 for a deleted key (in the trash) or a version deleted alone, to a caller who may list its type: when it was deleted',
    }),
  ),
  destroyed: Type.Optional(
    Type.Literal(true, {
      description: 'on a 404 for a version destroyed alone, to a caller who may list its type',
    }),
  ),
});

export type ApiToken = Static<typeof token>;
export type ApiCreatedToken = Static<typeof createdToken>;
export type ApiTokenList = Static<typeof tokenList>;
export type ApiSelf = Static<typeof self>;
export type ApiEntry = Static<typeof entry>;
export type ApiVersionsChange = Static<typeof versionsChange>;
const roleRule = closed({
  namespaces: Type.Array(Type.String()),
  actions: Type.Array(literals(['read', 'list', 'write', 'delete'] as const)),
  types: Type.Array(valueTypes),
});

export const roleView = closed({
  name: Type.String(),
  source: literals(
    ['built-in', 'configuration', 'runtime'] as const,
    'where the role is defined; only runtime roles change through the API',
  ),
  rules: Type.Array(roleRule),
  privileges: Type.Array(literals(PRIVILEGES)),
  updated_at: Type.Optional(timestamp),
});

export const roleList = closed({ roles: Type.Array(roleView) });

const claimValues = Type.Union([Type.String(), Type.Array(Type.String())]);
/** A string-keyed map of `values`; `description` starts with "Map:". */
const map = <S extends TSchema>(values: S, description: string) =>
  Type.Object({}, { additionalProperties: values, description: `Map: ${description}` });

export const loginRole = closed({
  id: Type.String({
    description:
      'drawn when the login role is created, kept when it is replaced: one deleted and made again is another, and the tokens of the first stay refused',
  }),
  issuer: Type.String(),
  jwks_url: Type.Optional(Type.String()),
  discovery: Type.Optional(Type.Boolean()),
  public_keys: Type.Optional(Type.Array(Type.String())),
  ca_pem: Type.Optional(Type.String()),
  bound_audiences: Type.Array(Type.String()),
  bound_subject: Type.Optional(Type.String()),
  bound_claims: Type.Optional(
    map(claimValues, 'claim path → accepted value(s), exact or globs with *'),
  ),
  role: Type.Optional(Type.String()),
  scopes: Type.Optional(Type.Array(scope)),
  groups_claim: Type.Optional(Type.String()),
  group_roles: Type.Optional(map(Type.String(), 'group → role')),
  oidc: Type.Optional(
    closed({
      client_id: Type.String(),
      client_secret_set: Type.Boolean({
        description: 'whether a client secret is kept (it is never shown)',
      }),
      scopes: Type.Array(Type.String()),
      redirect_uris: Type.Optional(Type.Array(Type.String())),
    }),
  ),
  ttl: Type.Integer({ description: 'seconds' }),
  max_ttl: Type.Integer({ description: 'seconds' }),
  claims_to_metadata: Type.Optional(map(Type.String(), 'claim path → token metadata field')),
  updated_at: timestamp,
});

export const loginRoleList = closed({
  login_roles: Type.Array(closed({ name: Type.String(), login_role: loginRole })),
});

export type ApiRole = Static<typeof roleView>;
export type ApiRoleList = Static<typeof roleList>;
export type ApiLoginRole = Static<typeof loginRole>;
export type ApiLoginRoleList = Static<typeof loginRoleList>;
export type ApiEntryInfo = Static<typeof entryInfo>;
export type ApiListing = Static<typeof listing>;
export type ApiNamespaceValues = Static<typeof namespaceValues>;
export type ApiVersionList = Static<typeof versionList>;
export type ApiTrashListing = Static<typeof trashListing>;
export type ApiKeyMetadata = Static<typeof keyMetadata>;
export type ApiKeyringStatus = Static<typeof keyringStatus>;
export type ApiRotation = Static<typeof rotation>;
export type ApiRetirement = Static<typeof retirement>;
export type ApiMigration = Static<typeof migration>;
export type ApiRewrap = Static<typeof rewrapView>;
export type ApiSnapshotList = Static<typeof snapshotList>;
export type ApiAuditPage = Static<typeof auditPage>;
export type ApiVerification = Static<typeof verification>;
export type ApiAuditPublicKey = Static<typeof auditPublicKey>;
export type ApiAuditChains = Static<typeof auditChains>;
export type ApiSealReport = Static<typeof sealReport>;
export type ApiServerVersion = Static<typeof serverVersion>;
export type ApiHealth = Static<typeof healthReport>;
export type ApiProblem = Static<typeof problem>;

/**
 * The shapes the OpenAPI document names in components.schemas (a generated client gets a type of each name),
 * referenced by $ref wherever the same object appears in an answer.
 */
export const NAMED_SCHEMAS: Readonly<Record<string, object>> = {
  Problem: problem,
  Token: token,
  CreatedToken: createdToken,
  TokenList: tokenList,
  TokenMetadata: metadata,
  Scope: scope,
  Capability: capability,
  Self: self,
  Entry: entry,
  EntryInfo: entryInfo,
  Listing: listing,
  NamespaceValue: namespaceValue,
  NamespaceValues: namespaceValues,
  VersionList: versionList,
  TrashListing: trashListing,
  KeyMetadata: keyMetadata,
  KeyringStatus: keyringStatus,
  ServerVersion: serverVersion,
  Rotation: rotation,
  Retirement: retirement,
  Migration: migration,
  RewrapProgress: rewrapView,
  SnapshotList: snapshotList,
  AuditEntry: auditEntry,
  AuditPage: auditPage,
  AuditVerification: verification,
  AuditCoverage: coverage,
  AuditPublicKey: auditPublicKey,
  SealReport: sealReport,
  HealthReport: healthReport,
  Role: roleView,
  RoleList: roleList,
  LoginRole: loginRole,
  LoginRoleList: loginRoleList,
  OidcStart: oidcStart,
  ConsoleSession: consoleSession,
};
