/**
 * The keyring operations an operator runs — rotate, retire, migrate-key — each recorded, once it has
 * changed something, as an operator event naming who and what (`keyring.rotate`, `keyring.retire`,
 * `keyring.migrate`; audit/events.ts). Rewrap is its own service (rewrap.ts), recording its own events.
 */

import { secretsOf } from '../keys/registry.js';
import type { OperatorEvents } from '../model/operator-events.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { KvRecords } from '../store/kv-records.js';
import { type KeyringStatus, keyringStatus } from './keyring-status.js';
import { type MigrateRequest, type MigrateResult, migrateKey } from './migrate-key.js';

export interface KeyringOperationsDeps {
  readonly kv: Pick<KvRecords, 'everyVersion'>;
  readonly keyring: KeyringHolder;
  readonly events: OperatorEvents;
  readonly now: () => number;
  /** This server's settings: their secret provider fields (a PKCS#11 PIN) serve a migration they apply to. */
  readonly settings: object;
}

export class KeyringOperations {
  constructor(private readonly deps: KeyringOperationsDeps) {}

  /** The master key, the keyring versions with the records each wraps, and which one is active. */
  status(): Promise<KeyringStatus> {
    return keyringStatus(this.deps.kv, this.deps.keyring);
  }

  /** Adds a keyring version and makes it the active one. `by`: the caller's token id. */
  async rotate(by: string): Promise<{ previous_version: number; active_version: number }> {
    const previous = this.deps.keyring.current().activeVersion;
    const active = await this.deps.keyring.rotate(this.deps.now(), by);
    await this.deps.events.record(
      'keyring.rotate',
      { by, previous_version: previous, active_version: active },
      'keyring rotated',
    );
    return { previous_version: previous, active_version: active };
  }

  /** Removes every keyring version that is not active and that no record names; returns those and the rest. */
  async retire(by: string): Promise<{ retired: number[]; versions: number[] }> {
    const status = await keyringStatus(this.deps.kv, this.deps.keyring);
    const unused = status.versions
      .filter((v) => !v.active && v.secrets === 0 && v.configs === 0)
      .map((v) => v.version);
    if (unused.length > 0) {
      await this.deps.keyring.retire(unused);
      await this.deps.events.record(
        'keyring.retire',
        { by, retired_versions: unused },
        'keyring versions retired',
      );
    }
    const versions = status.versions
      .filter((v) => !unused.includes(v.version))
      .map((v) => v.version);
    return { retired: unused, versions };
  }

  /** Rewraps the keyring under the master key `request` names (operator/migrate-key.ts). */
  async migrate(by: string, request: MigrateRequest): Promise<MigrateResult> {
    const result = await migrateKey(
      this.deps.keyring,
      request,
      secretsOf(this.deps.settings),
      this.deps.now(),
    );
    const { from, to } = result;
    await this.deps.events.record(
      'keyring.migrate',
      { by, from: from.description, to: to.description, migrations: to.migrations },
      'master key migrated',
    );
    return result;
  }
}
