/**
 * The key-value feature: /v1/kv (routes/kv-reads.ts: four GET operations; routes/kv-writes.ts: PUT,
 * DELETE), the change events of its keys (routes/kv-events.ts: GET /v1/events, event-streams.ts) and the
 * same keys as Vault's KV v2 mounts (routes/vault-kv.ts), its service (kv-service.ts) and who waits for
 * which key (key-changes.ts), woken by this process's writes, its siblings' (the supervisor's workers)
 * and, on PostgreSQL, other servers'.
 */
import type { Feature } from '../api/feature.js';
import { vaultMounts } from '../api/vault-dialect.js';
import { EventStreams } from './event-streams.js';
import { KeyChanges } from './key-changes.js';
import { KvService } from './kv-service.js';
import { kvEventOperations } from './routes/kv-events.js';
import { kvReadOperations } from './routes/kv-reads.js';
import { kvWebhookOperations } from './routes/kv-webhooks.js';
import { kvWriteOperations } from './routes/kv-writes.js';
import { vaultEventOperations } from './routes/vault-events.js';
import { vaultKvOperations } from './routes/vault-kv.js';
import { WebhookAdmin } from './webhooks/webhook-admin.js';
import { WebhookDispatch } from './webhooks/webhook-dispatch.js';

export const kvFeature: Feature<{
  readonly kv: KvService;
  readonly streams: EventStreams;
  readonly webhooks: WebhookAdmin;
}> = {
  name: 'kv',
  open({ config, options, records, keyring, metrics, now, audit, log, events }) {
    const peers = options.peers;
    const changes = new KeyChanges(
      config.max_waits,
      (ref) => {
        if (peers?.publish(ref)) metrics.kvChangesPublished.inc();
      },
      peers?.interest?.bind(peers),
    );
    peers?.subscribe((ref) => {
      metrics.kvChangesRelayed.inc();
      if (ref === undefined) changes.heardEvery();
      else changes.heard(ref);
    });
    // A token revoked or the keyring rotated here: events no key's change announces (store/keyring-store.ts).
    const stopEvents = keyring.onEventsWritten(() => changes.changedEvery());
    const stopHearing = records.kv.onChange((ref) =>
      ref === undefined ? changes.heardAll() : changes.heard(ref),
    );
    // Another server's change moved the event log on: the event streams read it.
    const stopFollowing = records.events.onMoved((gap) =>
      gap ? changes.heardAll() : changes.heardEvery(),
    );
    metrics.sources.kvWaitsHeld = () => changes.size;
    const streams = new EventStreams({ log: records.events, changes, audit });
    const kv = new KvService({
      records: records.kv,
      keyring,
      maxValueBytes: config.max_value_bytes,
      now,
      changes,
    });
    const delivery = {
      log: records.events,
      feed: streams.feed,
      records: records.webhooks,
      changes,
      audit,
      logger: log,
      allowPrivate: config.webhooks_allow_private,
      userAgent: 'Coffer-Webhooks',
    };
    const dispatch = new WebhookDispatch(delivery);
    dispatch.start();
    metrics.sources.webhooks = () => dispatch.states();
    const webhooks = new WebhookAdmin({ ...delivery, dispatch, events, now });
    let stopped: Promise<void> = Promise.resolve();
    return {
      services: { kv, streams, webhooks },
      // Held waits answer now (304: nothing changed yet), so their connections can drain. Webhook
      // delivery stops, its cursors stored, and lets its lease go to a process that goes on serving.
      drain() {
        stopped = dispatch.close();
        changes.close();
        stopHearing();
        stopFollowing();
        stopEvents();
      },
      close: () => stopped,
    };
  },
  operations: ({ kv, streams, webhooks }, { config, respond, recordIntent }) => [
    ...kvReadOperations({ kv, respond }),
    ...kvWriteOperations({ kv, respond, recordIntent }),
    ...kvEventOperations({ streams, respond }),
    ...kvWebhookOperations({ webhooks, respond }),
    // The same keys in Vault's dialect, for Vault's clients (KV v2 under /vault/v1).
    ...vaultKvOperations({ kv, mounts: vaultMounts(config.vault.mounts), respond, recordIntent }),
    ...vaultEventOperations({ streams, mounts: vaultMounts(config.vault.mounts), respond }),
  ],
};
