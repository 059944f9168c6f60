/**
 * A credential kept in a file (the token COFFER_TOKEN_FILE names, a workload's JWT), read at each use so
 * that a rotated file is followed. A file that cannot be read, or holds nothing, is `no_token`: nothing was
 * sent, so it is the settings' fault, never an outage that a fallback copy would stand in for.
 */
import { readFile } from 'node:fs/promises';
import { CofferError } from './errors.js';

export async function readCredential(file: string, what: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CofferError({
      status: 0,
      code: 'no_token',
      detail: `cannot read ${what} ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    });
  }
  const credential = text.trim();
  if (credential === '')
    throw new CofferError({ status: 0, code: 'no_token', detail: `${what} ${file} is empty` });
  return credential;
}
