/** Chain keys and a writer description for tests that run an audit writer without a server. */
import { hostname } from 'node:os';
import { type ChainKeys, chainKeysOf } from '../../src/audit/chain-keys.js';
import { sodiumReady } from '../../src/crypto/aead.js';
import { Keyring } from '../../src/crypto/keyring.js';
import type { ChainWriter } from '../../src/store/audit-records.js';

/** The keys of a keyring made for the test. */
export async function testChainKeys(): Promise<ChainKeys> {
  await sodiumReady();
  return chainKeysOf(Keyring.generate(Date.now()));
}

/** This process as a chain's writer, checkpointing at least every `checkpointMs`. */
export const thisWriter = (checkpointMs = 60_000): ChainWriter => ({
  host: hostname(),
  pid: process.pid,
  checkpoint_ms: checkpointMs,
});
