/**
 * The audit search's filters, declared once for every consumer: GET /v1/sys/audit's query parameters
 * (operator/routes/audit.ts, and the document made of them), what audit/query.ts reads them into, the
 * client's `searchAudit` options, `coffer audit search`'s options (the name with `-` for `_`) and the
 * console's search form. A filter added here is served, documented, offered by the CLI and the console, and
 * typed in the client. Plain data: the console imports it as it is.
 */

export interface AuditFilterDeclaration {
  /** What the API document says of the parameter. */
  readonly description: string;
  /** The console's label for its field. */
  readonly label: string;
  /** An ISO 8601 time (documented as `date-time`; audit/query.ts reads it). */
  readonly time?: true;
}

export const AUDIT_FILTERS = {
  from: { description: 'inclusive', label: 'From (ISO time)', time: true },
  to: { description: 'exclusive', label: 'To (ISO time)', time: true },
  token_id: {
    description: 'the caller, the token acted on, or who ran an operator event',
    label: 'Token id',
  },
  token_name: {
    description: "exactly this token name (the caller's metadata.name)",
    label: 'Token name',
  },
  request_id: {
    description: "one request's entries: the X-Request-Id it was answered with",
    label: 'Request id (X-Request-Id)',
  },
  login_role: {
    description: "JWT logins (and their tokens' creations) with this login role",
    label: 'Login role',
  },
  issuer: { description: "JWT logins with this issuer (the JWT's iss)", label: 'Issuer' },
  subject: {
    description: "JWT logins with this verified subject (the JWT's sub)",
    label: 'Subject',
  },
  prefix: { description: 'prefix of namespace/key', label: 'Namespace or key prefix' },
  key: { description: 'exactly this namespace/key', label: 'Key (namespace/key)' },
  action: {
    description: 'an action or event name; a trailing * matches a prefix',
    label: 'Action (keyring.* for a prefix)',
  },
  outcome: {
    description: 'success, failure, a status (403) or an error code (forbidden)',
    label: 'Outcome (success, failure, a status such as 403, or a code such as forbidden)',
  },
} as const satisfies Readonly<Record<string, AuditFilterDeclaration>>;

export type AuditFilterName = keyof typeof AUDIT_FILTERS;

/** The filters as the API names them, each a string as sent. */
export type AuditFilterQuery = { readonly [K in AuditFilterName]?: string | undefined };

/** Every filter's name, in the declaration's order. */
export const AUDIT_FILTER_NAMES = Object.keys(AUDIT_FILTERS) as AuditFilterName[];

/** A name with `-` for each `_`, as a command-line option spells it. */
export type Dashed<S extends string> = S extends `${infer A}_${infer B}` ? `${A}-${Dashed<B>}` : S;

/** A filter's name as a command-line option: `token_id` → `token-id`. */
export const auditFilterOption = <K extends AuditFilterName>(name: K): Dashed<K> =>
  name.replaceAll('_', '-') as Dashed<K>;
