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
 *
 * Who may name a variable: a variable's name decides what the command does with it — NODE_OPTIONS,
 * NPM_CONFIG_NODE_OPTIONS, JAVA_OPTS, GIT_PAGER, LESSOPEN, a proxy… run code or send traffic with every
 * value the command holds, and no list of such names is ever complete. So a key names its own variable
 * by the rule only when its version was written by a token that could read every value of its namespace
 * (the server records that with the version, under its seal: `writer_reads_all`): its writer gains
 * nothing from the command. Any other value's variable is the command's user's to name — `--map KEY=VAR`,
 * or `--allow-var VAR` for the name the rule gives — and is refused otherwise, naming the keys. On top of
 * that, a key whose variable is one known to change how programs load or run (LOADER_VARIABLES) is
 * refused unless named with `--map`, whoever wrote it.
 */
export interface SourceValue {
  readonly namespace: string;
  readonly key: string;
  readonly value: string;
  /** Its version's writer could read every value of the namespace (the server's `writer_reads_all`). */
  readonly writerReadsAll?: boolean;
}

export interface MappingOptions {
  readonly prefix?: string | undefined;
  /** Keys (or namespace/key) to keep; all when undefined. */
  readonly only?: readonly string[] | undefined;
  /** KEY=VAR or NAMESPACE/KEY=VAR. */
  readonly map?: readonly string[] | undefined;
  /** Variables the rule may give a value whose writer could not read the whole namespace. */
  readonly 'allow-var'?: readonly string[] | undefined;
}

export class MappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MappingError';
  }
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Variables that change how a program is loaded or run — which code it loads, which interpreter options it
 * takes, where it looks for commands — rather than what it is told. Set from a key by the rule, one could
 * let whoever may write that key (a config writer who may not read the secrets) run code with every value
 * `coffer run` gives the program: refused unless named with `--map KEY=VAR`, the operator's own choice.
 * Names, and prefixes (ending in `*`); docs/cli.md lists them.
 */
export const LOADER_VARIABLES: readonly string[] = [
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_EXTRA_CA_CERTS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'LD_*',
  'DYLD_*',
  'PATH',
  'BASH_ENV',
  'ENV',
  'BASHOPTS',
  'SHELLOPTS',
  'PS4',
  'PROMPT_COMMAND',
  'IFS',
  'SHELL',
  'PYTHON*',
  'PERL5*',
  'PERLLIB',
  'PERLIO',
  'RUBYOPT',
  'RUBYLIB',
  'GEM_HOME',
  'GEM_PATH',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'CLASSPATH',
  'DOTNET_STARTUP_HOOKS',
  'CORECLR_*',
  'COR_*',
  'PHPRC',
  'PHP_INI_SCAN_DIR',
  'LUA_PATH*',
  'LUA_CPATH*',
  'LUA_INIT*',
  'TCLLIBPATH',
  'GCONV_PATH',
  'HOSTALIASES',
  'LOCPATH',
  'NLSPATH',
  'MALLOC_*',
  'GLIBC_TUNABLES',
  'OPENSSL_CONF',
  'OPENSSL_ENGINES',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_EXEC_PATH',
  'GIT_CONFIG*',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'BROWSER',
];

/** Whether `variable` is one that changes how programs load or run (LOADER_VARIABLES). */
export function isLoaderVariable(variable: string): boolean {
  const name = variable.toUpperCase();
  return LOADER_VARIABLES.some((entry) =>
    entry.endsWith('*') ? name.startsWith(entry.slice(0, -1)) : name === entry,
  );
}

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
  const allowed = new Set(options['allow-var'] ?? []);
  for (const name of allowed)
    if (!VARIABLE.test(name))
      throw new MappingError(`--allow-var ${name}: a variable name (letters, digits and _)`);

  const byVariable = new Map<string, SourceValue>();
  const unmappable: string[] = [];
  const loaders: string[] = [];
  const unnamed: string[] = [];
  const withNul: string[] = [];
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
    if (mapped.length === 0 && isLoaderVariable(variable)) {
      loaders.push(`${v.namespace}/${v.key} (${variable})`);
      continue;
    }
    if (mapped.length === 0 && v.writerReadsAll !== true && !allowed.has(variable)) {
      unnamed.push(`${v.namespace}/${v.key} (${variable})`);
      continue;
    }
    // No environment variable holds a NUL byte (nor a shell's, nor a dotenv file's).
    if (v.value.includes('\0')) {
      withNul.push(`${v.namespace}/${v.key} (${variable})`);
      continue;
    }
    const earlier = byVariable.get(variable);
    if (earlier)
      throw new MappingError(
        `${earlier.namespace}/${earlier.key} and ${v.namespace}/${v.key} both map to ${variable}: keep one with --only, or name one with --map KEY=VAR`,
      );
    byVariable.set(variable, v);
  }
  if (loaders.length > 0)
    throw new MappingError(
      `${loaders.join(', ')}: would set a variable that changes how programs load or run, which whoever may write the key could use to run code with every value given here; refused. If it is meant, name it yourself with --map KEY=VAR (docs/cli.md lists these variables)`,
    );
  if (unnamed.length > 0)
    throw new MappingError(
      `${unnamed.join(', ')}: written by a token that could not read every value of its namespace (or before 2026-12-08), so ${unnamed.length === 1 ? 'it does' : 'they do'} not name ${unnamed.length === 1 ? 'its own variable' : 'their own variables'}: a name decides what the command does with a variable (NPM_CONFIG_NODE_OPTIONS, JAVA_OPTS, GIT_PAGER run code with every value given here). Name each yourself: --allow-var VAR, or --map KEY=VAR (or write the value again with a token that may read the whole namespace)`,
    );
  if (withNul.length > 0)
    throw new MappingError(
      `${withNul.join(', ')}: the value holds a NUL byte, which no environment variable can hold; keep the others with --only, or read it with coffer kv get`,
    );
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
