/**
 * The KV v2 mounts Vault's clients see under /vault/v1 (COFFER_VAULT_MOUNTS; api/vault-dialect.ts serves
 * them): each a Coffer namespace prefix and the type of the values written through it.
 */

/** A mount list that is not of the form COFFER_VAULT_MOUNTS takes; the message says which and why. */
export class VaultMountError extends Error {
  override name = 'VaultMountError';
}

/** One Vault mount as Coffer serves it. */
export interface VaultMount {
  /** Its name in Vault's paths: `secret` in `secret/data/app/db`. */
  readonly name: string;
  /** The Coffer namespace its paths are under ('' for the top level). */
  readonly prefix: string;
  /** The type of the values written through it. */
  readonly type: 'secret' | 'config';
}

const MOUNT =
  /^([a-z][a-z0-9_-]{0,62})(?:=([a-z0-9][a-z0-9_.-]*(?:\/[a-z0-9][a-z0-9_.-]*)*)?)?(?::(secret|config))?$/;

/**
 * The mounts COFFER_VAULT_MOUNTS declares: `name[=prefix][:type]` each, e.g. `secret`,
 * `apps=teams/apps:config`. Throws on one that is not of that form, naming it.
 */
export function vaultMounts(specs: readonly string[]): VaultMount[] {
  const mounts = specs.map((spec) => {
    const m = MOUNT.exec(spec);
    if (!m)
      throw new VaultMountError(
        `vault mount ${JSON.stringify(spec)}: name[=namespace prefix][:secret|config], e.g. secret or apps=teams/apps:config`,
      );
    return {
      name: m[1]!,
      prefix: m[2] ?? '',
      type: (m[3] ?? 'secret') as VaultMount['type'],
    };
  });
  const names = new Set(mounts.map((mount) => mount.name));
  if (names.size !== mounts.length) throw new VaultMountError('a vault mount is named twice');
  for (const reserved of ['sys', 'auth', 'identity', 'cubbyhole'])
    if (names.has(reserved))
      throw new VaultMountError(`vault mount ${reserved}: the name is Vault's own`);
  return mounts;
}
