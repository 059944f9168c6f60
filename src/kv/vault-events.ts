/**
 * Change events in the shape Vault sends them on its event subscription (`sys/events/subscribe/{type}`,
 * `json=true`: CloudEvents, `data.event.metadata` as its KV v2 plugin fills it), for the clients that follow
 * Vault's events — the Vault Secrets Operator's instant updates read `data.event.metadata.path` and
 * `.modified`, and `data.namespace`. An event of a key under one of the Vault mounts Coffer serves
 * (COFFER_VAULT_MOUNTS) becomes one message per such mount, its paths as that mount names the key; a key
 * under none is not sent. Never a value.
 */
import { randomUUID } from 'node:crypto';
import { compileGlob, type Glob } from '../model/glob.js';
import type { VaultMount } from '../model/vault-mounts.js';
import type { EventMessage, KvEventMessage } from './event-stream.js';

/** Vault's KV v2 operation for a Coffer change, and the paths its event names (relative to the mount). */
function kvV2(
  event: KvEventMessage,
  rest: string,
): { operation: string; path: string; data?: string } {
  const data = `data/${rest}`;
  switch (event.operation) {
    case 'write':
      return { operation: 'data-write', path: data, data };
    case 'delete':
      // Coffer's delete keeps the versions (the trash): Vault's soft delete of the latest.
      return { operation: 'data-delete', path: data };
    case 'undelete':
      return { operation: 'undelete', path: `undelete/${rest}`, data };
    case 'destroy':
      return { operation: 'metadata-delete', path: `metadata/${rest}` };
    case 'metadata':
      return { operation: 'metadata-write', path: `metadata/${rest}`, data: `metadata/${rest}` };
    case 'versions': {
      const action = event.versions?.action ?? 'delete';
      return {
        operation: action,
        path: `${action}/${rest}`,
        ...(action === 'undelete' ? { data } : {}),
      };
    }
  }
}

/** The key's path under `mount`, when the key lies under it. */
function pathUnder(mount: VaultMount, namespace: string, key: string): string | undefined {
  if (mount.prefix === '') return `${namespace}/${key}`;
  if (namespace === mount.prefix) return key;
  if (namespace.startsWith(`${mount.prefix}/`))
    return `${namespace.slice(mount.prefix.length + 1)}/${key}`;
  return undefined;
}

export interface VaultEventMessage {
  readonly id: string;
  readonly source: string;
  readonly specversion: '1.0';
  readonly type: '*';
  readonly data: {
    readonly event: { readonly id: string; readonly metadata: Record<string, string> };
    readonly event_type: string;
    readonly namespace: string;
    readonly plugin_info: Record<string, string>;
  };
  readonly datacontentype: 'application/cloudevents';
  readonly time: string;
}

/** The Vault messages of `event`: one per mount the key lies under (none for a change that is not a key's). */
export function vaultEventMessages(
  event: EventMessage,
  mounts: readonly VaultMount[],
): VaultEventMessage[] {
  const out: VaultEventMessage[] = [];
  if (event.kind !== 'kv') return out;
  for (const mount of mounts) {
    const rest = pathUnder(mount, event.namespace, event.key);
    if (rest === undefined) continue;
    const kv = kvV2(event, rest);
    const id = randomUUID();
    out.push({
      id,
      source: 'coffer',
      specversion: '1.0',
      type: '*',
      data: {
        event: {
          id,
          metadata: {
            modified: 'true',
            operation: kv.operation,
            path: `${mount.name}/${kv.path}`,
            ...(kv.data ? { data_path: `${mount.name}/${kv.data}` } : {}),
            current_version: String(event.version),
            ...(event.versions ? { versions: JSON.stringify(event.versions.of) } : {}),
            coffer_position: String(event.position),
          },
        },
        event_type: `kv-v2/${kv.operation}`,
        namespace: '',
        plugin_info: {
          mount_class: 'secret',
          mount_path: `${mount.name}/`,
          plugin: 'kv',
          version: '2',
        },
      },
      datacontentype: 'application/cloudevents',
      time: event.at,
    });
  }
  return out;
}

/** What a subscription's `{type}` pattern selects: Vault's event types, `*` matching any run of characters. */
export function eventTypeMatcher(pattern: string): Glob {
  return compileGlob(pattern);
}
