/**
 * `coffer audit verify --remote` and `coffer audit search [--remote]`: an auditor with only a token checks
 * and searches the log through the server (GET /v1/sys/audit/verify, GET /v1/sys/audit), with the same output
 * and exit codes as the offline commands; the offline search reads the audit directory (and, on shared
 * storage, every server's chains in the store) as the server does.
 */

import type { Coverage } from '../audit/coverage.js';
import { storedChains } from '../audit/database-copy.js';
import {
  type AuditEntry,
  type AuditFilter,
  type AuditPosition,
  type AuditQuery,
  auditFilterOf,
  queryAudit,
} from '../audit/query.js';
import type { CofferConfig } from '../config/schema.js';
import {
  AUDIT_FILTER_NAMES,
  type AuditFilterName,
  auditFilterOption,
  type Dashed,
} from '../model/audit-filters.js';
import { printCoverage, printLocalScope, printVerdict } from './audit-verify.js';
import type { Out } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';
import { withKeyring } from './offline-store.js';
import { connect, explain } from './session.js';

/** The server's verification, printed as the offline one prints it. */
export async function verifyRemote(out: Out): Promise<number> {
  const coffer = connect();
  try {
    const result = await coffer.verifyAudit();
    if (!result.intact) {
      printVerdict(result, 0, out);
      return EXIT.failure;
    }
    printVerdict(result, result.files, out);
    out(
      `checkpoints signed by Ed25519 public key ${result.public_key} (GET /v1/sys/audit/public-key; coffer audit verify --public-key checks the files with it alone)`,
    );
    const covered = printCoverage(result.coverage as unknown as Coverage, out);
    printLocalScope(out);
    return covered;
  } catch (err) {
    throw explain(err, coffer, 'audit verify');
  }
}

/** `coffer audit search`'s options: each filter (model/audit-filters.ts) with `-` for `_`, and the page's. */
export const SEARCH_OPTIONS = {
  ...(Object.fromEntries(
    AUDIT_FILTER_NAMES.map((name) => [auditFilterOption(name), { type: 'string' }]),
  ) as { readonly [K in AuditFilterName as Dashed<K>]: { readonly type: 'string' } }),
  limit: { type: 'string' },
  remote: { type: 'boolean' },
} as const;

/** The filters as the API names them, from the command's options. */
function queryOf(options: Record<string, unknown>): AuditQuery {
  return Object.fromEntries(
    AUDIT_FILTER_NAMES.map((name) => [
      name,
      options[auditFilterOption(name)] as string | undefined,
    ]),
  );
}

/** One entry per line: time, action, what it named, outcome, who; `--json`: the entry itself. */
function printEntry(entry: Record<string, unknown>, json: boolean, out: Out): void {
  if (json) {
    out(JSON.stringify(entry));
    return;
  }
  const outcome = entry.outcome as { status?: number; code?: string | null } | undefined;
  const reads = entry.reads as { key: string; version: number }[] | undefined;
  const what =
    typeof entry.namespace === 'string'
      ? typeof entry.key === 'string'
        ? `${entry.namespace}/${entry.key}${entry.version === undefined ? '' : ` v${entry.version}`}`
        : reads
          ? `${entry.namespace}/ [${reads.map((r) => `${r.key} v${r.version}`).join(', ')}]`
          : `${entry.namespace}/`
      : typeof entry.subject_token_id === 'string'
        ? `token ${entry.subject_token_id}`
        : '';
  const who =
    typeof entry.token_name === 'string'
      ? `${entry.token_name} (${entry.token_id})`
      : typeof entry.token_id === 'string'
        ? String(entry.token_id)
        : typeof entry.by === 'string'
          ? `by ${entry.by}`
          : '-';
  const name = entry.kind === 'event' ? entry.event : entry.action;
  const status =
    outcome?.status === undefined
      ? ''
      : `${outcome.status}${outcome.code ? ` ${outcome.code}` : ''}`;
  out([entry.ts, name, what, status, who].filter((part) => part !== '').join('  '));
}

export async function searchCommand(
  config: () => CofferConfig,
  options: Record<string, unknown>,
  json: boolean,
  out: Out,
): Promise<number> {
  if (options.limit !== undefined && !/^[1-9][0-9]{0,6}$/.test(String(options.limit)))
    throw new CliError('--limit must be a whole number from 1', EXIT.usage);
  const max = options.limit === undefined ? Number.POSITIVE_INFINITY : Number(options.limit);
  const query = queryOf(options);
  // Refused here as the server refuses it, before anything is read.
  const filter: AuditFilter = auditFilterOf(query, (name, message) => {
    throw new CliError(`--${auditFilterOption(name as AuditFilterName)}: ${message}`, EXIT.usage);
  });
  let printed = 0;
  if (options.remote) {
    const coffer = connect();
    try {
      let cursor: string | undefined;
      do {
        const page = await coffer.searchAudit({
          ...Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)),
          limit: Math.min(1000, max - printed),
          ...(cursor === undefined ? {} : { cursor }),
        });
        for (const entry of page.entries) printEntry(entry, json, out);
        printed += page.entries.length;
        cursor = page.next_cursor ?? undefined;
      } while (cursor !== undefined && printed < max);
    } catch (err) {
      throw explain(err, coffer, 'audit search');
    }
    return EXIT.ok;
  }
  const settings = config();
  return withKeyring(settings, async (_store, records) => {
    const stored = await storedChains(records.audit);
    let after: AuditPosition | null = null;
    do {
      const page = await queryAudit(
        settings.audit.dir!,
        filter,
        Math.min(1000, max - printed),
        after,
        stored,
      );
      for (const entry of page.entries as AuditEntry[]) printEntry(entry, json, out);
      printed += page.entries.length;
      after = page.next;
    } while (after !== null && printed < max);
    return EXIT.ok;
  });
}
