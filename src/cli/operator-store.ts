/**
 * `coffer operator snapshot | restore | migrate-storage`: whole-store operations, run offline against the
 * store the server's settings name (store/snapshot.ts).
 */
import { type FileHandle, open as openFile, rm } from 'node:fs/promises';
import { loadConfig } from '../config/load.js';
import { sodiumReady } from '../crypto/aead.js';
import { openKeyProvider } from '../keys/registry.js';
import { SnapshotError, type SnapshotSummary } from '../store/snapshot.js';
import {
  copyTarget,
  describeStore,
  type StorageSettings,
  StorageTargetError,
  Store,
} from '../store/store.js';
import type { Out } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';
import { fileProblem } from './file-errors.js';
import { withKeyring } from './offline-store.js';
import { progress } from './progress.js';

export async function snapshot(file: string, out: Out): Promise<void> {
  // The master key opens the keyring, whose snapshot key authenticates the file.
  await withKeyring(loadConfig(), async (store, _records, holder) => {
    let handle: FileHandle;
    try {
      // Owner-only, and never over an existing file.
      handle = await openFile(file, 'wx', 0o600);
    } catch (err) {
      throw new CliError(`--out ${file}: ${fileProblem(err, 'cannot create it')}`, EXIT.usage);
    }
    let summary: SnapshotSummary;
    try {
      summary = await store.snapshot(
        handle,
        Date.now(),
        holder.current(),
        progress(out, 'records'),
      );
    } catch (err) {
      // The file is ours (created above, never over another): a snapshot that did not finish goes.
      await handle.close();
      await rm(file, { force: true });
      throw err;
    }
    await handle.close();
    out(
      `snapshot written to ${file}: ${summary.records} records (${Object.entries(summary.kinds)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}), sha256 ${summary.sha256}`,
    );
    out(
      `keyring ${summary.keyring ?? '(none: an empty store)'}; authenticated under it: restoring it needs that keyring's master key, and refuses a changed file`,
    );
  });
}

export async function restore(
  file: string,
  acceptUnauthenticated: boolean,
  out: Out,
): Promise<void> {
  const config = loadConfig();
  await sodiumReady();
  const { provider } = await openKeyProvider(config);
  const store = await Store.open(config);
  try {
    const summary = await store.restore(
      file,
      { provider, acceptUnauthenticated },
      progress(out, 'records'),
    );
    out(
      `restored ${summary.records} records from ${file} (${summary.mac === null ? `sha256 ${summary.sha256} checked; not authenticated: a version made before snapshots were` : 'authenticated, and its sha256 checked'})`,
    );
  } catch (err) {
    if (err instanceof SnapshotError) throw new CliError(err.message, EXIT.failure);
    throw err;
  } finally {
    await store.close();
  }
}

export async function migrateStorage(to: string, resume: boolean, out: Out): Promise<void> {
  const config = loadConfig();
  let target: StorageSettings;
  try {
    // Each storage backend reads its own `--to NAME[:WHERE]` (storage/plugin.ts `target`).
    target = copyTarget(to, config);
  } catch (err) {
    if (err instanceof StorageTargetError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  const source = await Store.open(config);
  try {
    const destination = await Store.open(target);
    try {
      const { records, resumedAfter } = await source.copyTo(destination, progress(out, 'records'), {
        resume,
      });
      const where = describeStore(target);
      out(
        resumedAfter > 0
          ? `resumed after the ${resumedAfter} records an earlier copy left (checked against the store), copied the other ${records - resumedAfter} to ${where}, and counted all ${records} there`
          : `copied ${records} records to ${where} and counted them there`,
      );
      out(
        'start the servers on the new store with the same master key (and keep the audit directories)',
      );
    } catch (err) {
      if (err instanceof SnapshotError) throw new CliError(err.message, EXIT.failure);
      throw err;
    } finally {
      await destination.close();
    }
  } finally {
    await source.close();
  }
}
