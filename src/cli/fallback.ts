/**
 * `coffer run --fallback FILE`: an encrypted copy of the values last fetched, so an application still starts
 * while Coffer cannot be reached. XChaCha20-Poly1305 under a key derived (HKDF-SHA-256) from the operator's
 * key (`--fallback-key-file`, or COFFER_FALLBACK_KEY: 32 bytes, raw in a file or as hex or base64), with the
 * format, the Coffer address, the namespaces and the time of writing as associated data: a copy for other
 * namespaces or another server, an edited time, or any changed byte fails to open and is refused. Written
 * owner-only (0600) through a temporary file, synced and renamed, so a reader sees the old copy or the new.
 * Nothing is ever written in plaintext.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { KeyProviderError } from '../keys/key-provider.js';
import { readOwnerOnlyFile } from '../keys/secret-file.js';
import { parseDuration } from '../model/duration.js';
import type { SourceValue } from './env-names.js';
import { CliError, EXIT } from './exit-codes.js';

const FORMAT = 'coffer-run-fallback/1';

export interface FallbackCopy {
  readonly values: SourceValue[];
  readonly writtenAt: Date;
}

interface FallbackFile {
  readonly format: string;
  readonly address: string;
  readonly namespaces: string[];
  readonly written_at: string;
  readonly salt: string;
  readonly nonce: string;
  readonly ciphertext: string;
}

/** The operator's 32-byte key: from a file (owner-only) or COFFER_FALLBACK_KEY. */
export function fallbackKey(file: string | undefined, env: NodeJS.ProcessEnv): Buffer {
  let text: Buffer;
  let where: string;
  if (file !== undefined) {
    where = `--fallback-key-file ${file}`;
    // Checked as the master key file is: a regular file only its owner can read, opened once.
    let read: Buffer | undefined;
    try {
      read = readOwnerOnlyFile(file, '--fallback-key-file', 1024);
    } catch (err) {
      if (err instanceof KeyProviderError)
        throw new CliError(`${where}: ${err.message}`, EXIT.usage);
      throw err;
    }
    if (read === undefined) throw new CliError(`${where}: no such file`, EXIT.usage);
    text = read;
  } else if (env.COFFER_FALLBACK_KEY) {
    where = 'COFFER_FALLBACK_KEY';
    text = Buffer.from(env.COFFER_FALLBACK_KEY);
  } else
    throw new CliError(
      '--fallback needs a key: --fallback-key-file FILE or COFFER_FALLBACK_KEY (32 random bytes; head -c 32 /dev/urandom > fallback.key)',
      EXIT.usage,
    );
  // Raw bytes only from a key file (head -c 32 /dev/urandom): a variable's 32 characters are a password,
  // not a key, and are refused — hex or base64 there, as docs/cli.md says.
  if (file !== undefined && text.length === 32) return text;
  const trimmed = text.toString('latin1').trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  const decoded = Buffer.from(trimmed, 'base64');
  if (decoded.length === 32 && /^[A-Za-z0-9+/_-]+=*$/.test(trimmed)) return decoded;
  throw new CliError(
    file !== undefined
      ? `${where}: not a 32-byte key (raw, 64 hex digits, or base64)`
      : `${where}: not a 32-byte key written as 64 hex digits or base64 (openssl rand -hex 32)`,
    EXIT.usage,
  );
}

const associated = (address: string, namespaces: readonly string[], writtenAt: string): Buffer =>
  Buffer.from(JSON.stringify([FORMAT, address, [...namespaces].sort(), writtenAt]));

const derive = (key: Buffer, salt: Buffer): Buffer =>
  Buffer.from(hkdfSync('sha256', key, salt, FORMAT, 32));

async function sodium() {
  const { default: lib } = await import('libsodium-wrappers');
  await lib.ready;
  return lib;
}

/** Writes the copy atomically, owner-only. */
export async function writeFallback(
  file: string,
  key: Buffer,
  address: string,
  namespaces: readonly string[],
  values: readonly SourceValue[],
  now = new Date(),
): Promise<void> {
  const lib = await sodium();
  const writtenAt = now.toISOString();
  const salt = randomBytes(16);
  const nonce = randomBytes(24);
  const plaintext = Buffer.from(JSON.stringify(values));
  const ciphertext = lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
    plaintext,
    associated(address, namespaces, writtenAt),
    null,
    nonce,
    derive(key, salt),
  );
  plaintext.fill(0);
  const body: FallbackFile = {
    format: FORMAT,
    address,
    namespaces: [...namespaces].sort(),
    written_at: writtenAt,
    salt: salt.toString('base64'),
    nonce: nonce.toString('base64'),
    ciphertext: Buffer.from(ciphertext).toString('base64'),
  };
  const temporary = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(body)}\n`);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(temporary, file);
  const dir = openSync(dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/** The copy, if it is for this address and these namespaces, opens, and is younger than `maxAgeMs`. */
export async function readFallback(
  file: string,
  key: Buffer,
  address: string,
  namespaces: readonly string[],
  maxAgeMs: number,
  now = Date.now(),
): Promise<FallbackCopy> {
  let parsed: FallbackFile;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as FallbackFile;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      code === 'ENOENT'
        ? `no fallback copy at ${file}`
        : `the fallback copy ${file} cannot be read (${code ?? 'not JSON'})`,
      EXIT.unavailable,
    );
  }
  if (parsed.format !== FORMAT || typeof parsed.written_at !== 'string')
    throw new CliError(`${file} is not a coffer run fallback copy`, EXIT.unavailable);
  const wanted = JSON.stringify([...namespaces].sort());
  if (parsed.address !== address || JSON.stringify(parsed.namespaces) !== wanted)
    throw new CliError(
      `the fallback copy ${file} holds ${JSON.stringify(parsed.namespaces)} of ${parsed.address}, not ${wanted} of ${address}: refused`,
      EXIT.unavailable,
    );
  const lib = await sodium();
  let plaintext: Uint8Array;
  try {
    plaintext = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      Buffer.from(parsed.ciphertext, 'base64'),
      associated(address, namespaces, parsed.written_at),
      Buffer.from(parsed.nonce, 'base64'),
      derive(key, Buffer.from(parsed.salt, 'base64')),
    );
  } catch {
    throw new CliError(
      `the fallback copy ${file} failed its check (changed, or sealed under another key): refused`,
      EXIT.unavailable,
    );
  }
  const writtenAt = new Date(parsed.written_at);
  const age = now - writtenAt.getTime();
  if (!(age <= maxAgeMs))
    throw new CliError(
      `the fallback copy ${file} was written ${formatAge(age)} ago (${parsed.written_at}), more than the ${formatAge(maxAgeMs)} --fallback-max-age allows: refused`,
      EXIT.unavailable,
    );
  return {
    values: JSON.parse(Buffer.from(plaintext).toString('utf8')) as SourceValue[],
    writtenAt,
  };
}

/** A duration such as 90s, 30m, 24h or 7d, in milliseconds (the settings' grammar, model/duration.ts). */
export function durationOption(text: string, option: string): number {
  const ms = parseDuration(text);
  if (ms === undefined)
    throw new CliError(`${option} ${text}: a duration such as 90s, 30m, 24h or 7d`, EXIT.usage);
  return ms;
}

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
