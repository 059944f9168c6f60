/**
 * The storage backend behind a Store, for store/ itself and for tests that play someone who can write the
 * storage. The dependency rules (.dependency-cruiser.cjs) forbid this module to the rest of src/.
 */
import type { StorageBackend } from '../storage/backend.js';

const backends = new WeakMap<object, StorageBackend>();

/** Registers `store`'s backend (store.ts, when it opens one). */
export function setBackend(store: object, backend: StorageBackend): void {
  backends.set(store, backend);
}

export function backendOf(store: object): StorageBackend {
  const backend = backends.get(store);
  if (!backend) throw new Error('not a Store');
  return backend;
}
