/**
 * The key-value feature: /v1/kv (routes/kv-reads.ts: four GET operations; routes/kv-writes.ts: PUT,
 * DELETE) and the same keys as Vault's KV v2 mounts (routes/vault-kv.ts), its service (kv-service.ts) and who waits for which key (key-changes.ts), woken by this
 * process's writes, its siblings' (the supervisor's workers) and, on PostgreSQL, other servers'.
 */
import type { Feature } from '../api/feature.js';
import { vaultMounts } from '../api/vault-dialect.js';
import { KeyChanges } from './key-changes.js';
import { KvService } from './kv-service.js';
import { kvReadOperations } from './routes/kv-reads.js';
import { kvWriteOperations } from './routes/kv-writes.js';
import { vaultKvOperations } from './routes/vault-kv.js';

export const kvFeature: Feature<{ readonly kv: KvService }> = {
  name: 'kv',
  open({ config, options, records, keyring, metrics, now }) {
    const changes = new KeyChanges(config.max_waits, (ref) => options.peers?.publish(ref));
    options.peers?.subscribe((ref) => changes.heard(ref));
    const stopHearing = records.kv.onChange((ref) =>
      ref === undefined ? changes.heardAll() : changes.heard(ref),
    );
    metrics.sources.kvWaitsHeld = () => changes.size;
    const kv = new KvService({
      records: records.kv,
      keyring,
      maxValueBytes: config.max_value_bytes,
      now,
      changes,
    });
    return {
      services: { kv },
      // Held waits answer now (304: nothing changed yet), so their connections can drain.
      drain() {
        changes.close();
        stopHearing();
      },
    };
  },
  operations: ({ kv }, { config, respond, recordIntent }) => [
    ...kvReadOperations({ kv, respond }),
    ...kvWriteOperations({ kv, respond, recordIntent }),
    // The same keys in Vault's dialect, for Vault's clients (KV v2 under /vault/v1).
    ...vaultKvOperations({ kv, mounts: vaultMounts(config.vault.mounts), respond, recordIntent }),
  ],
};
