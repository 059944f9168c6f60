/**
 * From a namespace's values to a process's environment (`coffer run`, `coffer export`), by one rule:
 *
 *   a key's variable is its name in upper case with each `.` and `-` made `_`, after `--prefix`:
 *   db_password → DB_PASSWORD, api.url → API_URL, tls-cert → TLS_CERT.
 *
 * The result must be a portable variable name (`[A-Z_][A-Z0-9_]*`): a key that starts with a digit cannot be
 * mapped (name it with `--map`). `--map KEY=VAR` (or `--map NAMESPACE/KEY=VAR`) names one key's variable
 * itself; `--only KEY…` keeps only those keys (a key named there that is not found is an error). Two keys
 * that come to the same variable — `db-url` and `db_url`, or one key in two namespaces — are an error naming
 * both, never one silently winning.
 */
export interface SourceValue {
  readonly namespace: string;
  readonly key: string;
  readonly value: string;
}

export interface MappingOptions {
  readonly prefix?: string | undefined;
  /** Keys (or namespace/key) to keep; all when undefined. */
  readonly only?: readonly string[] | undefined;
  /** KEY=VAR or NAMESPACE/KEY=VAR. */
  readonly map?: readonly string[] | undefined;
}

export class MappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MappingError';
  }
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variable the rule gives `key` (with `prefix`), or undefined when it gives none. */
export function variableFor(key: string, prefix = ''): string | undefined {
  const name = prefix + key.toUpperCase().replace(/[.-]/g, '_');
  return VARIABLE.test(name) ? name : undefined;
}

const matches = (selector: string, v: SourceValue): boolean =>
  selector.includes('/') ? selector === `${v.namespace}/${v.key}` : selector === v.key;

/** The variables and their values, in a stable order; a MappingError says what cannot be mapped. */
export function environmentOf(
  values: readonly SourceValue[],
  options: MappingOptions = {},
): Map<string, string> {
  const prefix = options.prefix ?? '';
  if (prefix !== '' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix))
    throw new MappingError(
      `--prefix ${prefix}: a variable name must start with a letter or _ and hold only letters, digits and _`,
    );
  const explicit = (options.map ?? []).map((entry) => {
    const at = entry.lastIndexOf('=');
    const selector = entry.slice(0, at);
    const variable = entry.slice(at + 1);
    if (at <= 0 || !VARIABLE.test(variable))
      throw new MappingError(
        `--map ${entry}: expected KEY=VAR (or NAMESPACE/KEY=VAR), VAR a variable name`,
      );
    return { selector, variable, used: false };
  });
  const only = options.only?.map((selector) => ({ selector, used: false }));

  const byVariable = new Map<string, SourceValue>();
  const unmappable: string[] = [];
  for (const v of values) {
    if (only) {
      const kept = only.filter((o) => matches(o.selector, v));
      if (kept.length === 0) continue;
      for (const o of kept) o.used = true;
    }
    const mapped = explicit.filter((m) => matches(m.selector, v));
    for (const m of mapped) m.used = true;
    const variable = mapped.at(-1)?.variable ?? variableFor(v.key, prefix);
    if (variable === undefined) {
      unmappable.push(`${v.namespace}/${v.key}`);
      continue;
    }
    const earlier = byVariable.get(variable);
    if (earlier)
      throw new MappingError(
        `${earlier.namespace}/${earlier.key} and ${v.namespace}/${v.key} both map to ${variable}: keep one with --only, or name one with --map KEY=VAR`,
      );
    byVariable.set(variable, v);
  }
  if (unmappable.length > 0)
    throw new MappingError(
      `${unmappable.join(', ')}: no variable name for ${unmappable.length === 1 ? 'this key' : 'these keys'} (a name must not start with a digit); name ${unmappable.length === 1 ? 'it' : 'each'} with --map KEY=VAR`,
    );
  const missing = only?.filter((o) => !o.used).map((o) => o.selector) ?? [];
  if (missing.length > 0)
    throw new MappingError(
      `--only ${missing.join(' ')}: not found, or not readable with this token`,
    );
  const unusedMaps = explicit.filter((m) => !m.used).map((m) => m.selector);
  if (unusedMaps.length > 0)
    throw new MappingError(
      `--map ${unusedMaps.join(' ')}: no such key, or not readable with this token`,
    );
  return new Map([...byVariable].map(([variable, v]) => [variable, v.value]));
}
