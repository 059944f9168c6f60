/** A file the command could not read or write, said in words rather than as an errno code. */

const MEANING: Record<string, string> = {
  EEXIST: 'it exists already: name another file, or remove it first',
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of its path is not a directory',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EMFILE: 'too many open files',
};

/** `err`'s meaning for a file (`fallback` when it carries no code: say, the file is not JSON). */
export function fileProblem(err: unknown, fallback: string): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === undefined) return fallback;
  return MEANING[code] ?? code;
}
