/**
 * The storage backends, by configuration name. A new backend is one file exporting a StoragePlugin
 * (storage/plugin.ts) and one entry in STORAGE_BACKENDS: its settings join the configuration, and the
 * conformance suite (test/storage/conformance.ts) runs against it.
 */
import type { StorageBackend } from './backend.js';
import { lmdbStorage } from './lmdb-backend.js';
import {
  type Announced,
  NOTHING_ANNOUNCED,
  type StoragePlugin,
  type StorageSettings,
  StorageTargetError,
} from './plugin.js';
import { postgresStorage } from './postgres-storage.js';

export { type StorageSettings, StorageTargetError } from './plugin.js';

export const STORAGE_BACKENDS = [lmdbStorage, postgresStorage] as const;

export type StorageName = (typeof STORAGE_BACKENDS)[number]['name'];
export const STORAGE_NAMES = STORAGE_BACKENDS.map((b) => b.name) as StorageName[];

/** Every backend's settings, as top-level configuration properties. */
export const STORAGE_SETTINGS = Object.assign(
  {},
  ...STORAGE_BACKENDS.map((b) => b.settings),
) as Intersection<(typeof STORAGE_BACKENDS)[number]['settings']>;

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

function backendNamed(name: string): StoragePlugin {
  const backend = STORAGE_BACKENDS.find((b) => b.name === name);
  if (!backend) throw new Error(`no storage backend named ${name}`);
  return backend;
}

/** Whether a store could be there without opening it (which may create it): LMDB's directory exists. */
export function storeMayExist(settings: StorageSettings): boolean {
  return backendNamed(settings.storage).mayExist(settings);
}

export function openStorage(
  settings: StorageSettings,
  announced: Announced = NOTHING_ANNOUNCED,
): Promise<StorageBackend> {
  return backendNamed(settings.storage).open(settings, announced);
}

/**
 * A copy's destination, `--to NAME[:WHERE]` (coffer operator migrate-storage): the backend NAME reads its
 * own WHERE (storage/plugin.ts `target`). Refuses a target that is the store being copied.
 */
export function copyTarget(to: string, config: StorageSettings): StorageSettings {
  const colon = to.indexOf(':');
  const name = colon < 0 ? to : to.slice(0, colon);
  const backend = STORAGE_BACKENDS.find((b) => b.name === name);
  if (!backend)
    throw new StorageTargetError(
      `--to must be ${STORAGE_BACKENDS.map((b) => b.targetForm).join(' or ')}`,
    );
  const target = backend.target(colon < 0 ? undefined : to.slice(colon + 1), config);
  if (config.storage === name && backend.sameStore(config, target))
    throw new StorageTargetError('--to names the store being copied');
  return target;
}

/** Where a store is, in words, without any secret. */
export function describeStore(settings: StorageSettings): string {
  return backendNamed(settings.storage).describe(settings);
}
