import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { KeyProviderError } from './key-provider.js';

/**
 * Reads a file holding key material: it must be a regular file that only its owner can read or write.
 * Returns undefined when the file does not exist; any other problem stops start-up naming `setting`.
 * The file is opened once and checked through that descriptor, so it cannot be swapped in between.
 */
export function readOwnerOnlyFile(
  path: string,
  setting: string,
  maxBytes: number,
): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new KeyProviderError(setting, `cannot open ${path} (${code})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new KeyProviderError(setting, `${path} is not a regular file`);
    if ((stat.mode & 0o077) !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
      throw new KeyProviderError(
        setting,
        `${path} is accessible by group or others (mode ${mode}); run: chmod 600 ${path}`,
      );
    }
    if (stat.size > maxBytes)
      throw new KeyProviderError(setting, `${path} is larger than ${maxBytes} bytes`);
    const bytes = Buffer.alloc(stat.size);
    if (readSync(fd, bytes, 0, stat.size, 0) !== stat.size)
      throw new KeyProviderError(setting, `${path} could not be read whole`);
    return bytes;
  } finally {
    closeSync(fd);
  }
}
