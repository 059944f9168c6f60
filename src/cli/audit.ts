/**
 * `coffer audit verify [files…]` — checks audit files offline: it reads the same COFFER_* settings as the
 * server, opens the master key and the keyring (for the checkpoint key) and the store's record of the
 * chains, and verifies every chain. Without files it takes every audit file in the audit directory.
 * Prints "intact: N entries from T1 to T2" (exit 0) or the first broken entry and why (exit 1).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AuditRegistry } from '../audit/registry.js';
import { verifyAudit } from '../audit/verify.js';
import { loadConfig } from '../config/load.js';
import { sodiumReady } from '../crypto/aead.js';
import { KeyringHolder } from '../crypto/keyring-store.js';
import { openKeyProvider, providerConfig } from '../keys/registry.js';
import { openStorage } from '../storage/registry.js';
import { CliError } from './client.js';

export const AUDIT_USAGE = `usage: coffer audit verify [files…]

  verify [files…]   check the audit chains and checkpoints offline (default: every file in the audit
                    directory); prints "intact: …" and exits 0, or the first broken entry and exits 1

Reads the server's COFFER_* settings: the data directory, the master key (for the checkpoint key), the
audit directory.
`;

type Out = (line: string) => void;

export async function auditCommand(args: string[], out: Out = (l) => process.stdout.write(`${l}\n`)): Promise<number> {
  const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help || positionals[0] !== 'verify') {
    out(AUDIT_USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  const files = positionals.length > 1
    ? positionals.slice(1)
    : readdirSync(config.audit.dir!).filter((name) => name.startsWith('audit-') && name.endsWith('.jsonl')).map((name) => join(config.audit.dir!, name));
  if (files.length === 0) throw new CliError(`no audit files in ${config.audit.dir}`, 1);

  await sodiumReady();
  const storage = openStorage(config);
  try {
    const { provider } = await openKeyProvider(config);
    const { holder } = await KeyringHolder.open(storage, { provider, config: providerConfig(config) }, Date.now());
    const registry = await new AuditRegistry(storage).chains();
    let result;
    try {
      result = verifyAudit(files, holder.current().auditKey(), registry);
    } catch (err) {
      throw new CliError((err as Error).message, 2);
    }
    if (result.intact) {
      out(`intact: ${result.entries} entries from ${result.first ?? '-'} to ${result.last ?? '-'} (${result.chains} chains, ${files.length} files)`);
      if (result.uncheckpointed > 0) out(`note: the last ${result.uncheckpointed} entries are not yet covered by a checkpoint`);
      return 0;
    }
    out(`BROKEN: ${result.file}${result.line > 0 ? `:${result.line}` : ''}${result.seq === null ? '' : ` (seq ${result.seq})`}: ${result.reason}`);
    return 1;
  } finally {
    await storage.close();
  }
}

