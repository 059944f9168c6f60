/** The help of `coffer operator` and of each of its commands. */
import { KEY_PROVIDERS } from '../keys/registry.js';

export const OPERATOR_USAGE = `usage: coffer operator <command>

  status                          provider, keyring versions, the active one, records each wraps
  rotate                          add a keyring version; new writes use it at once, on every process
  rewrap [--batch-size N] [--retire]
                                  rewrap every record onto the active version (online, resumable);
                                  --retire then removes versions that wrap nothing
  migrate-key --to FILE           rewrap the keyring under another master key or provider; FILE is JSON
                                  with the new provider's settings as in the configuration file, e.g.
                                  {"key_provider":"aws-kms","kms":{"key_id":"alias/coffer"}}
                                  (paths are the server's; a PIN or passphrase only ever by file)
  snapshot --out FILE             a consistent, authenticated copy of the store's sealed records, taken
                                  while it serves
  restore --from FILE [--accept-unauthenticated]
                                  check and authenticate a snapshot whole, then write it into an empty store
  migrate-storage --to TARGET     copy the store into an empty one: postgres (the COFFER_PG_* settings,
                                  or --to postgres:URL) or lmdb:DIR (a data directory); --resume goes
                                  on with a copy that was cut off

Environment: COFFER_ADDR (default http://127.0.0.1:8750), COFFER_TOKEN (the root token). snapshot,
restore and migrate-storage open the store themselves, with the server's settings (COFFER_STORAGE,
COFFER_DATA_DIR, COFFER_PG_URL…) and need no token; snapshot and restore need the master key (nothing is
decrypted: the keyring authenticates the file).

examples:
  coffer operator status
  coffer operator rotate && coffer operator rewrap --retire
  coffer operator snapshot --out /backup/coffer-$(date +%F).snap
  coffer operator migrate-storage --to postgres
`;

/** Each command's own help (`coffer operator <command> --help`). */
export const COMMAND_HELP: Record<string, string> = {
  status: `usage: coffer operator status

Shows the master key (provider, and when it was last migrated), the keyring versions with the records each
wraps, and which one is active. Needs a token with the read_keyring privilege (root or auditor).
`,
  rotate: `usage: coffer operator rotate

Adds a keyring version and makes it active: new writes on every server process use it at once. Existing
records keep theirs until a rewrap. Root only.
`,
  rewrap: `usage: coffer operator rewrap [--batch-size N] [--retire]

Rewraps every record onto the active keyring version, online and resumable, showing progress.
  --batch-size N   records per transaction, 1 to 10000 (default 500)
  --retire         afterwards, remove the keyring versions that no longer wrap anything
Root only.
`,
  'migrate-key': `usage: coffer operator migrate-key --to FILE

Rewraps the keyring under another master key or provider, in one atomic write. FILE is JSON with the new
provider's settings as in the configuration file, e.g.
${KEY_PROVIDERS.map((p) => `  ${JSON.stringify(p.example)}`).join('\n')}
Providers:
${KEY_PROVIDERS.map((p) => `  ${p.name.padEnd(8)} ${p.summary}`).join('\n')}
Paths are the server's (relative ones are made absolute from this directory). A key file must exist
already; a PIN or passphrase is only ever read from a file. Afterwards, configure the server with the
variables it prints before the next restart. Root only.
`,
  snapshot: `usage: coffer operator snapshot --out FILE

Writes every record of the store, as stored (sealed or authenticated; nothing is decrypted), from one
consistent state of it while servers go on serving, with counts, a checksum and a MAC under the keyring's
snapshot key (a restore refuses a file changed after it was taken). FILE is created owner-only and must not
exist. Opens the store with the server's settings (COFFER_STORAGE, COFFER_DATA_DIR, COFFER_PG_URL…) and its
master key; needs no token. The audit log's files are not part of it: copy the audit directories as well.
`,
  'migrate-storage': `usage: coffer operator migrate-storage --to postgres[:URL] | lmdb:DIR [--resume]

Copies every record of the store the settings name (COFFER_STORAGE, COFFER_DATA_DIR, COFFER_PG_URL…), from
one consistent state of it, into an empty store: PostgreSQL (with --to postgres the COFFER_PG_* settings,
with --to postgres:URL that URL — never with a password in it: use PGPASSWORD or ~/.pgpass — and
COFFER_PG_SCHEMA) or LMDB in the data directory DIR. Records are copied as stored (nothing decrypted; no
token or master key needed) in key order, the keyring last, and the target's records are counted
afterwards. Stop the servers first, or the copy misses writes made after it began; then start them on the
new store with the same master key.
--resume goes on with a copy that was cut off: the target holds no keyring record yet, and what it holds
must equal the store's records up to its last one (checked before anything is written); the copy goes on
after it. The audit directories are not part of it: keep them.
`,
  restore: `usage: coffer operator restore --from FILE [--accept-unauthenticated]

Checks the snapshot whole (format, counts, checksum) and authenticates it — its MAC, under the snapshot key
of the keyring it holds, which the configured master key opens — then writes it into the store the
settings name (COFFER_STORAGE, COFFER_DATA_DIR, COFFER_PG_URL…), which must be empty — from LMDB to
PostgreSQL or back. Nothing is written from a file that fails. A restore cut off before its end leaves a
store to empty and restore again (its keyring is written last, so no server opens it meanwhile).
--accept-unauthenticated restores a snapshot made before snapshots were authenticated (versions 1 and 2),
which cannot be checked for changes: only for a file you trust.
`,
};
