import { AppError } from '../errors.js';

/**
 * Check-and-set: refuses a change unless the key's latest version is `expected` (0: the key has no live
 * version). Checked under the write's locks, so of two writers expecting the same version one wins.
 */
export function expectVersion(expected: number | undefined, current: number): void {
  if (expected === undefined || expected === current) return;
  throw new AppError(
    'precondition_failed',
    current === 0
      ? `the key does not exist (expected version ${expected})`
      : expected === 0
        ? `the key exists (its latest version is ${current})`
        : `the key's latest version is ${current}, not ${expected}`,
    undefined,
    undefined,
    { current_version: current },
  );
}
