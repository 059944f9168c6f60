/**
 * Mocha's global set-up and tear-down (loaded through .mocharc.json's `require`): system packages the
 * tests need, and the one temporary directory of this run, removed at the end even when tests fail.
 */

import { ensureSystemPackages } from './system-packages.js';
import { removeRunDir, removeStaleRunDirs, shareRunDir } from './temp-dirs.js';

export function mochaGlobalSetup(): void {
  removeStaleRunDirs();
  shareRunDir();
  ensureSystemPackages();
}

export function mochaGlobalTeardown(): void {
  removeRunDir();
}
