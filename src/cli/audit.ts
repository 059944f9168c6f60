/**
 * `coffer audit verify [files…]`, `archive --before DATE --to DIR` (cli/audit-verify.ts) and
 * `seal-report [--verify] [--json]` (cli/seal-report.ts), offline: each reads the same COFFER_* settings as
 * the server and opens the store, the master key and the keyring itself (LMDB allows this while the server
 * runs).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { auditTime } from '../audit/query.js';
import { loadConfig } from '../config/load.js';
import { SEARCH_OPTIONS, searchCommand, verifyRemote } from './audit-remote.js';
import { archiveCommand, verifyCommand } from './audit-verify.js';
import { type CommandIo, linesTo, processIo } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';
import { sealReportCommand } from './seal-report.js';
import { noSuchCommand } from './suggest.js';

export const AUDIT_USAGE = `usage: coffer audit <command>

  verify [files…]              check the audit chains offline (default: every file in the audit directory):
                               every line's link, the signed checkpoints, and against the store's record
                               which chains exist and where each ended; prints the checkpoints' public key,
                               then "intact: …" and exits 0, or the first broken entry and exits 1. Over the
                               whole directory it also says which stored changes the log names
                               ("covers: …"), and exits 1 if any has no entry
  verify --public-key KEY [files…]
                               an auditor's check with no secret: each chain up to its newest checkpoint,
                               by the checkpoints' signatures (KEY: GET /v1/sys/audit/public-key)
  verify --against FILE […]    also hold the log against what an audit stream shipped (NDJSON, or an
                               rsyslog file; --against once per file): every shipped line must still be in
                               the local log, unchanged ("NOT AS SHIPPED: …" names the first missing seq
                               of each chain, exit 1). With --public-key too, it needs no secret
  archive --before DATE --to DIR
                               move whole audit files whose entries are all older than DATE (ISO 8601)
                               to DIR, after checking the whole log; the move is recorded in the log, so
                               verify still passes and says what was archived
  verify --remote              the same check, run by the server (GET /v1/sys/audit/verify): for an auditor
                               with only a token (COFFER_ADDR, COFFER_TOKEN or COFFER_TOKEN_FILE); the same
                               output and exit codes
  search [filters] [--json] [--limit N] [--remote]
                               the entries that match, oldest first, one a line (--json: each entry as
                               the log holds it). Filters: --from TIME --to TIME --token-id ID
                               --token-name NAME --request-id ID --prefix NS/KEY --key NS/KEY
                               --login-role NAME --issuer ISS --subject SUB (JWT logins)
                               --action NAME (keyring.* for a family) --outcome success|failure|403|code.
                               Offline it reads the audit directory (and shared storage's chains);
                               --remote asks the server (GET /v1/sys/audit)
  seal-report [--verify] [--json]
                               check that every stored version is sealed, without decrypting anything
                               (needs no master key); --verify also opens each one in memory (needs the
                               key; no value is printed); exits 1 when it finds anomalies

Offline, reads the server's COFFER_* settings: the data directory, the master key, the audit directory.

examples:
  coffer audit verify
  coffer audit verify --remote
  coffer audit verify --public-key 3f2a… --against /var/log/coffer-audit.log
  coffer audit search --remote --key payments/prod/db_password --from 2026-11-01
  coffer audit search --token-name payments-api --outcome failure --json | jq .
`;

export async function auditCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  const out = linesTo(io);
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      verify: { type: 'boolean' },
      json: { type: 'boolean' },
      before: { type: 'string' },
      'public-key': { type: 'string' },
      against: { type: 'string', multiple: true },
      // Their --to: a time for search, a directory for archive.
      ...SEARCH_OPTIONS,
    },
  });
  const command = positionals[0];
  const commands = ['verify', 'seal-report', 'archive', 'search'];
  if (values.help || command === undefined) {
    out(AUDIT_USAGE);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  if (!commands.includes(command)) throw noSuchCommand('audit', command, commands);
  if (command === 'search') {
    if (positionals.length > 1) throw new CliError('search takes options only', EXIT.usage);
    return searchCommand(() => loadConfig(), values, values.json === true, out);
  }
  if (command === 'verify' && values.remote) {
    if (positionals.length > 1 || values['public-key'] || values.against)
      throw new CliError(
        "verify --remote checks the server's whole log: no files, no --public-key, no --against (run it offline with the shipped copy)",
        EXIT.usage,
      );
    return verifyRemote(out);
  }
  const config = loadConfig();
  if (command === 'verify') {
    if (values.verify || values.json || values.before || values.to)
      throw new CliError('verify takes only file names', EXIT.usage);
    return verifyCommand(
      config,
      positionals.slice(1),
      values['public-key'],
      out,
      (values.against ?? []).map((path) => resolve(path)),
    );
  }
  if (command === 'archive') {
    if (values.before === undefined || values.to === undefined || positionals.length > 1)
      throw new CliError('usage: coffer audit archive --before DATE --to DIR', EXIT.usage);
    const before = auditTime(values.before);
    if (before === undefined)
      throw new CliError(
        `--before ${values.before}: not an ISO 8601 date or time, e.g. 2026-10-01`,
        EXIT.usage,
      );
    return archiveCommand(config, before, resolve(values.to), out);
  }
  if (positionals.length > 1)
    throw new CliError('seal-report takes no arguments besides --verify and --json', EXIT.usage);
  return sealReportCommand(config, values.verify ?? false, values.json ?? false, io);
}
