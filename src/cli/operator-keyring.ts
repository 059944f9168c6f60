/**
 * `coffer operator status | rotate | rewrap | migrate-key`: key management against a running server, through
 * its HTTP API (the client, client/coffer.ts). Rewrap shows a progress bar on a terminal and a line every few seconds
 * otherwise.
 */
import { readFileSync } from 'node:fs';
import cliProgress from 'cli-progress';
import type { Coffer } from '../client/coffer.js';
import { ENV_SETTINGS, makeAbsolute } from '../config/load.js';
import { KEY_PROVIDERS } from '../keys/registry.js';
import type { Out } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';
import { fileProblem } from './file-errors.js';

export async function status(coffer: Coffer, out: Out): Promise<void> {
  const s = await coffer.keyringStatus();
  out(`provider: ${s.provider}   active version: ${s.active_version}`);
  out(
    `master key: ${s.wrapped_by}${s.migrated_at === null ? '' : ` (migrated at ${s.migrated_at})`}`,
  );
  out(
    `${'version'.padEnd(9)}${'created'.padEnd(26)}${'secrets'.padStart(10)}${'configs'.padStart(10)}`,
  );
  for (const v of s.versions) {
    out(
      `${`${v.version}${v.active ? ' *' : ''}`.padEnd(9)}${v.created_at.padEnd(26)}${String(v.secrets).padStart(10)}${String(v.configs).padStart(10)}`,
    );
  }
  if (s.unreadable > 0)
    out(`WARNING: ${s.unreadable} records name no keyring version or do not parse`);
}

export async function rotate(coffer: Coffer, out: Out): Promise<void> {
  const r = await coffer.rotateKeyring();
  out(
    `rotated: active keyring version ${r.previous_version} -> ${r.active_version}; run "coffer operator rewrap" to move existing records`,
  );
}

export async function rewrap(
  coffer: Coffer,
  out: Out,
  options: { batchSize?: number; retire: boolean; tty: boolean },
): Promise<void> {
  let view = await coffer.startRewrap(
    options.batchSize === undefined ? {} : { batch_size: options.batchSize },
  );
  out(
    `rewrapping onto keyring version ${view.target_version}${view.examined > 0 ? ` (continuing at ${view.examined})` : ''}`,
  );
  const bar = options.tty
    ? new cliProgress.SingleBar(
        {
          format: '{bar} {value}/{total} records | {rate}/s | ETA {eta_formatted}',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(Math.max(view.total, view.examined), view.examined, { rate: 0 });
  const started = Date.now();
  const firstExamined = view.examined;
  let lastLine = 0;
  while (view.running || view.finished_at === null) {
    await new Promise((r) => setTimeout(r, 250));
    view = await coffer.rewrapStatus();
    const rate = Math.round(
      ((view.examined - firstExamined) * 1000) / Math.max(1, Date.now() - started),
    );
    if (bar) {
      bar.setTotal(Math.max(view.total, view.examined));
      bar.update(view.examined, { rate });
    } else if (Date.now() - lastLine > 5000) {
      lastLine = Date.now();
      out(
        `progress: ${view.examined}/${view.total} records, ${view.rewrapped} rewrapped, ${rate} records/s`,
      );
    }
    if (!view.running && view.finished_at === null)
      throw new CliError(
        'the rewrap stopped before finishing (see the server log); run the command again to continue',
      );
  }
  bar?.stop();
  out(
    `done: ${view.examined} records examined, ${view.rewrapped} rewrapped, ${view.failed} failed to open or verify`,
  );
  if (view.failed > 0)
    throw new CliError(
      `${view.failed} records failed their integrity check and were left as they are; see the server log`,
    );
  if (options.retire) {
    const r = await coffer.retireKeyringVersions();
    out(
      r.retired.length > 0
        ? `retired keyring version${r.retired.length > 1 ? 's' : ''} ${r.retired.join(', ')} (no record used ${r.retired.length > 1 ? 'them' : 'it'} any more); versions left in the keyring: ${r.versions.join(', ')}`
        : 'no keyring version could be retired: every older version still wraps records (run a rewrap first)',
    );
  }
}

/** Reads the new provider's settings; relative paths are taken from the current directory. */
function readTarget(file: string): { key_provider: string; [setting: string]: unknown } {
  let target: unknown;
  try {
    target = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError(`--to ${file}: ${fileProblem(err, 'not a JSON object')}`, EXIT.usage);
  }
  if (typeof target !== 'object' || target === null || Array.isArray(target))
    throw new CliError(`--to ${file}: not a JSON object`, EXIT.usage);
  // The server names what is wrong with the settings; only their shape is checked here.
  if (typeof (target as { key_provider?: unknown }).key_provider !== 'string')
    throw new CliError(`--to ${file}: key_provider is missing`, EXIT.usage);
  const settings = { ...(target as { key_provider: string; [setting: string]: unknown }) };
  // The fields every provider says hold a path on the server, as the server's own loader takes them.
  makeAbsolute(
    settings,
    KEY_PROVIDERS.flatMap((p) => p.paths),
    process.cwd(),
  );
  return settings;
}

export async function migrate(coffer: Coffer, out: Out, file: string): Promise<void> {
  const target = readTarget(file);
  const r = await coffer.migrateKeyring(target);
  out(`migrated: the keyring is now wrapped by ${r.to} (was ${r.from})`);
  out("before the next restart, configure every server with (and remove the old key's settings):");
  for (const line of settingLines(target)) out(`  ${line}`);
  out('until then a restarted server refuses to start and says which key it needs');
}

/** `VARIABLE=value` for each setting of a migrate-key target (the configuration file's names where no variable exists). */
function settingLines(target: Record<string, unknown>): string[] {
  const lines: string[] = [];
  const add = (field: string, value: unknown): void => {
    if (value === null || value === undefined) return;
    const env = ENV_SETTINGS.find((s) => s.field === field)?.env;
    lines.push(
      env === undefined
        ? `${field} = ${JSON.stringify(value)} (in COFFER_CONFIG)`
        : `${env}=${String(value)}`,
    );
  };
  for (const [field, value] of Object.entries(target)) {
    if (typeof value === 'object' && value !== null)
      for (const [sub, inner] of Object.entries(value)) add(`${field}.${sub}`, inner);
    else add(field, value);
  }
  return lines;
}
