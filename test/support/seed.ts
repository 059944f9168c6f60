/** Seeds a store through the storage layer with records exactly like real writes (kv/version-writes.ts). */
import type { Keyring } from '../../src/crypto/keyring.js';
import type { ValueType } from '../../src/model/value-types.js';
import type { StorageBackend, StorageWrite } from '../../src/storage/backend.js';
import type { KeyMeta } from '../../src/store/kv-format.js';
import { sealedVersionWrites } from '../../src/store/kv-version-writes.js';
import { RecordSeal } from '../../src/store/record-seal.js';

export interface SeededVersion {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  readonly value: string;
}

/**
 * `keys` keys spread over `namespaces` namespaces; every fifth key has three versions and every seventh
 * version is a config value. Values are distinct per version, with some multi-byte characters.
 */
export async function seedStore(
  storage: StorageBackend,
  keyring: Keyring,
  keys: number,
  namespaces = 50,
): Promise<SeededVersion[]> {
  const seeded: SeededVersion[] = [];
  let writes: StorageWrite[] = [];
  for (let i = 0; i < keys; i++) {
    const namespace = `seed/ns${i % namespaces}`;
    const key = `k${i}`;
    let previous: KeyMeta | undefined;
    for (let version = 1; version <= (i % 5 === 0 ? 3 : 1); version++) {
      const type: ValueType = (i + version) % 7 === 0 ? 'config' : 'secret';
      const value = `value ${i}.${version} — ${'✓'.repeat(i % 4)}`;
      writes.push(
        ...sealedVersionWrites(keyring, new RecordSeal(() => keyring.recordKeys()), {
          namespace,
          key,
          version,
          type,
          value,
          createdAt: Date.now(),
          previous,
        }),
      );
      previous = { latest: version, type, first: 1 };
      seeded.push({ namespace, key, version, type, value });
    }
    if (writes.length >= 6000 || i === keys - 1) {
      const batch = writes;
      writes = [];
      await storage.atomic([], () => ({ writes: batch, result: undefined }));
    }
  }
  return seeded;
}
