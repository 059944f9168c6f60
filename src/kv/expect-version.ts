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

/**
 * A key that requires check-and-set (its metadata's cas_required) refuses a write that does not name the
 * version it replaces: 428. `named`: the caller named one (a merge over the version it read does not).
 */
export function requireNamedVersion(casRequired: boolean | undefined, named: boolean): void {
  if (casRequired && !named)
    throw new AppError(
      'precondition_required',
      'this key requires check-and-set: name the version a write replaces (If-Match or cas; 0 when the key is new)',
    );
}
