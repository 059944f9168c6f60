import pkcs11js from 'pkcs11js';
import { randomBytes } from '../crypto/random.js';
import {
  contextBytes,
  type HighWaterAnchor,
  type KeyProvider,
  KeyProviderError,
  type WrapContext,
} from './key-provider.js';

const FORMAT = 4;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface Pkcs11Settings {
  /** Path of the vendor's PKCS#11 module (.so). */
  readonly library: string;
  /** Exactly one of slot and token_label picks the token. */
  readonly slot: number | null;
  readonly token_label: string | null;
  /** CKA_LABEL of the AES key (CKO_SECRET_KEY, CKK_AES) inside the token. */
  readonly key_label: string;
}

/** One loaded and initialised module per library path and process (C_Initialize may run only once). */
const modules = new Map<string, pkcs11js.PKCS11>();

export function pkcs11Module(library: string): pkcs11js.PKCS11 {
  let module = modules.get(library);
  if (module) return module;
  module = new pkcs11js.PKCS11();
  try {
    module.load(library);
    module.C_Initialize();
  } catch (err) {
    throw new KeyProviderError(
      'COFFER_PKCS11_LIBRARY',
      `cannot load the PKCS#11 module ${library} (${(err as Error).message})`,
    );
  }
  modules.set(library, module);
  return module;
}

/**
 * The `pkcs11` provider: the keyring is encrypted by the HSM itself with AES-256-GCM under a key that
 * never leaves it (the HSM performs C_Encrypt/C_Decrypt; Coffer only ever holds a handle). The wrap
 * context is the GCM associated data. The IV comes from Coffer's CSPRNG: the key wraps a handful of
 * keyrings in its life, far below GCM's random-IV limit.
 *
 * Each operation opens a session, logs in, works and logs out again: the provider is used at start-up
 * and by key-management operations only, and holds no session between them.
 *
 * Wrapped data: [4][iv 12][ciphertext + tag 16].
 */
export class Pkcs11KeyProvider implements KeyProvider {
  readonly name = 'pkcs11';
  readonly description: string;

  private constructor(
    private readonly module: pkcs11js.PKCS11,
    private readonly slot: pkcs11js.Handle,
    private readonly settings: Pkcs11Settings,
    private readonly pin: string,
  ) {
    const token =
      settings.token_label === null ? `slot ${settings.slot}` : `token "${settings.token_label}"`;
    this.description = `pkcs11 key "${settings.key_label}" in ${token}`;
  }

  /** Finds the token and the key, refusing a key the HSM would let out (extractable or not sensitive). */
  static open(
    settings: Pkcs11Settings,
    pin: string,
  ): { provider: Pkcs11KeyProvider; notice?: string } {
    const module = pkcs11Module(settings.library);
    const provider = new Pkcs11KeyProvider(module, findSlot(module, settings), settings, pin);
    const notice = provider.withKey((session, key) => {
      const [extractable, sensitive] = module.C_GetAttributeValue(session, key, [
        { type: pkcs11js.CKA_EXTRACTABLE },
        { type: pkcs11js.CKA_SENSITIVE },
      ]);
      const leaves = extractable?.value?.[0] === 1 || sensitive?.value?.[0] === 0;
      return leaves
        ? `PKCS#11 key "${settings.key_label}" is extractable or not sensitive: the HSM would let it out; create it with CKA_EXTRACTABLE false and CKA_SENSITIVE true`
        : undefined;
    });
    return { provider, ...(notice === undefined ? {} : { notice }) };
  }

  async wrap(plaintext: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    const iv = randomBytes(IV_BYTES);
    const ciphertext = this.withKey((session, key) => {
      this.module.C_EncryptInit(session, gcm(iv, context), key);
      return this.module.C_Encrypt(
        session,
        Buffer.from(plaintext),
        Buffer.alloc(plaintext.length + TAG_BYTES + 16),
      );
    });
    return Buffer.concat([Buffer.from([FORMAT]), iv, ciphertext]);
  }

  async unwrap(wrapped: Uint8Array, context: WrapContext): Promise<Uint8Array> {
    if (wrapped[0] !== FORMAT || wrapped.length < 1 + IV_BYTES + TAG_BYTES) {
      throw new KeyProviderError(
        'COFFER_PKCS11_KEY_LABEL',
        'the stored keyring was not wrapped by the pkcs11 provider',
      );
    }
    const iv = Buffer.from(wrapped.subarray(1, 1 + IV_BYTES));
    const ciphertext = Buffer.from(wrapped.subarray(1 + IV_BYTES));
    return this.withKey((session, key) => {
      try {
        this.module.C_DecryptInit(session, gcm(iv, context), key);
        return new Uint8Array(
          this.module.C_Decrypt(session, ciphertext, Buffer.alloc(ciphertext.length)),
        );
      } catch {
        throw new KeyProviderError(
          'COFFER_PKCS11_KEY_LABEL',
          `the HSM key "${this.settings.key_label}" does not open the keyring stored in the data directory (another key, or the keyring was altered)`,
        );
      }
    });
  }

  /**
   * The high-water marks kept in the token as data objects (CKO_DATA, private, on the token, application
   * `coffer`, labelled by name): out of reach of whoever writes the data directory.
   */
  readonly anchor: HighWaterAnchor = {
    read: (name) =>
      this.withKey((session) =>
        findData(this.module, session, name).flatMap((found) => {
          const [value] = this.module.C_GetAttributeValue(session, found, [
            { type: pkcs11js.CKA_VALUE },
          ]);
          return value?.value === undefined
            ? []
            : [Buffer.from(value.value as Buffer).toString('utf8')];
        }),
      ),
    // A data object's value cannot be changed in every token (SoftHSM refuses): the new one is made, then
    // the old ones go, so a failure between the two leaves both (read takes the greatest), never none.
    write: (name, value) =>
      this.withKey((session) => {
        const old = findData(this.module, session, name);
        this.module.C_CreateObject(session, [
          { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_DATA },
          { type: pkcs11js.CKA_TOKEN, value: true },
          { type: pkcs11js.CKA_PRIVATE, value: true },
          { type: pkcs11js.CKA_APPLICATION, value: DATA_APPLICATION },
          { type: pkcs11js.CKA_LABEL, value: name },
          { type: pkcs11js.CKA_VALUE, value: Buffer.from(value, 'utf8') },
        ]);
        for (const found of old) this.module.C_DestroyObject(session, found);
      }, true),
  };

  /** Runs `use` in a logged-in session with the key's handle; the session is closed afterwards. */
  private withKey<T>(
    use: (session: pkcs11js.Handle, key: pkcs11js.Handle) => T,
    readWrite = false,
  ): T {
    const module = this.module;
    let session: pkcs11js.Handle;
    try {
      session = module.C_OpenSession(
        this.slot,
        pkcs11js.CKF_SERIAL_SESSION | (readWrite ? pkcs11js.CKF_RW_SESSION : 0),
      );
    } catch (err) {
      throw new KeyProviderError(
        'COFFER_PKCS11_SLOT',
        `cannot open a session on the token (${reason(err)})`,
      );
    }
    try {
      login(module, session, this.pin);
      return use(session, findKey(module, session, this.settings.key_label));
    } finally {
      try {
        module.C_Logout(session);
      } catch {
        // Not logged in (login failed): nothing to undo.
      }
      module.C_CloseSession(session);
    }
  }
}

function gcm(iv: Buffer, context: WrapContext): pkcs11js.Mechanism {
  const parameter: pkcs11js.GcmParams = {
    type: pkcs11js.CK_PARAMS_GCM,
    iv,
    ivBits: IV_BYTES * 8,
    aad: Buffer.from(contextBytes(context)),
    tagBits: TAG_BYTES * 8,
  };
  return { mechanism: pkcs11js.CKM_AES_GCM, parameter };
}

function findSlot(module: pkcs11js.PKCS11, settings: Pkcs11Settings): pkcs11js.Handle {
  const slots = module.C_GetSlotList(true);
  if (settings.slot !== null) {
    const slot = slots.find((handle) => handle.readBigUInt64LE() === BigInt(settings.slot!));
    if (!slot)
      throw new KeyProviderError(
        'COFFER_PKCS11_SLOT',
        `no token is present in slot ${settings.slot}`,
      );
    return slot;
  }
  const slot = slots.find(
    (handle) => module.C_GetTokenInfo(handle).label.trimEnd() === settings.token_label,
  );
  if (!slot)
    throw new KeyProviderError(
      'COFFER_PKCS11_TOKEN_LABEL',
      `no token labelled "${settings.token_label}" is present`,
    );
  return slot;
}

function login(module: pkcs11js.PKCS11, session: pkcs11js.Handle, pin: string): void {
  try {
    module.C_Login(session, pkcs11js.CKU_USER, pin);
  } catch (err) {
    const code = reason(err);
    if (code === 'CKR_USER_ALREADY_LOGGED_IN') return;
    if (code === 'CKR_PIN_INCORRECT')
      throw new KeyProviderError('COFFER_PKCS11_PIN', 'the HSM refused the PIN (incorrect)');
    if (code === 'CKR_PIN_LOCKED')
      throw new KeyProviderError('COFFER_PKCS11_PIN', "the token's user PIN is locked");
    throw new KeyProviderError('COFFER_PKCS11_PIN', `the HSM refused the login (${code})`);
  }
}

/** The application name of Coffer's data objects in the token. */
const DATA_APPLICATION = 'coffer';

/** Coffer's data objects labelled `name` in the token (a few at the most). */
function findData(
  module: pkcs11js.PKCS11,
  session: pkcs11js.Handle,
  name: string,
): pkcs11js.Handle[] {
  module.C_FindObjectsInit(session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_DATA },
    { type: pkcs11js.CKA_APPLICATION, value: DATA_APPLICATION },
    { type: pkcs11js.CKA_LABEL, value: name },
  ]);
  try {
    return module.C_FindObjects(session, 8);
  } finally {
    module.C_FindObjectsFinal(session);
  }
}

function findKey(
  module: pkcs11js.PKCS11,
  session: pkcs11js.Handle,
  label: string,
): pkcs11js.Handle {
  module.C_FindObjectsInit(session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
    { type: pkcs11js.CKA_LABEL, value: label },
  ]);
  let found: pkcs11js.Handle[];
  try {
    found = module.C_FindObjects(session, 2);
  } finally {
    module.C_FindObjectsFinal(session);
  }
  if (found.length === 0)
    throw new KeyProviderError(
      'COFFER_PKCS11_KEY_LABEL',
      `the token holds no AES key labelled "${label}"`,
    );
  if (found.length > 1)
    throw new KeyProviderError(
      'COFFER_PKCS11_KEY_LABEL',
      `the token holds more than one AES key labelled "${label}"`,
    );
  return found[0]!;
}

/** The PKCS#11 return code name (CKR_…) or the error's message; never the PIN, which no call echoes. */
function reason(err: unknown): string {
  return (err as Error).message?.split(':')[0] ?? 'error';
}
