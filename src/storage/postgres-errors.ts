/**
 * What a PostgreSQL error means for Coffer: the server cannot be reached (answered 503
 * storage_unavailable), or the transaction is to run again.
 */
import { StorageUnavailableError } from './backend.js';

/**
 * SQLSTATE classes and codes of a server that cannot be used now: connection exceptions (08), the server
 * shutting down or starting or the database dropped (57P01-57P04), a statement cancelled by the timeout
 * (57014), insufficient resources (53: too many connections, disk full, out of memory), the database not
 * accepting connections (55000, ALLOW_CONNECTIONS false) or not there (3D000), and the login refused (28:
 * a password or pg_hba.conf changed). Each is the database being out of reach, answered 503, never a fault.
 */
const UNAVAILABLE_CODE = /^(08...|57P0[1-4]|57014|53...|55000|3D000|28...)$/;
/** node-postgres's own messages for a connection that could not be made or was lost. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended/;

/** `err` as StorageUnavailableError when it says the server cannot be reached; otherwise `err` itself. */
export function unavailable(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof StorageUnavailableError) return err;
  const code = (err as { code?: unknown }).code;
  const network = typeof code === 'string' && /^E[A-Z]+$/.test(code); // ECONNREFUSED, ECONNRESET, …
  if (
    network ||
    (typeof code === 'string' && UNAVAILABLE_CODE.test(code)) ||
    UNAVAILABLE_MESSAGE.test(err.message)
  )
    return new StorageUnavailableError(typeof code === 'string' ? code : err.message.slice(0, 80));
  return err;
}

/** PostgreSQL's codes for a transaction to run again: serialization_failure, deadlock_detected. */
const RETRY_CODES = new Set(['40001', '40P01']);

/** Whether `err` asks for the transaction to run again. */
export function isRetryable(err: unknown): boolean {
  return RETRY_CODES.has((err as { code?: unknown }).code as string);
}

/** Whether `err` is lock_not_available (55P03): a lock not granted within the transaction's lock_timeout. */
export function isLockNotAvailable(err: unknown): boolean {
  return (err as { code?: unknown }).code === '55P03';
}
