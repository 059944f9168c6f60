import { randomBytes } from 'node:crypto';
/**
 * The audit log's own CPU on the write path, without HTTP: 32 concurrent callers commit a write-sized LMDB
 * transaction (three records) in a loop, with nothing audited (`none`), with the request's audit line after
 * the commit (`request`), or also with the intent placed before it and its copy committed with it
 * (`intent`) — the same AuditLog, AuditWriter and IntentJournal the server uses. Run pinned to one core,
 * e.g. `taskset -c 0 node dist/bench/audit-path.js intent`; compare the modes run back to back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/audit-log.js';
import { chainKeysOf } from '../src/audit/chain-keys.js';
import { FileSink } from '../src/audit/file-sink.js';
import { IntentJournal } from '../src/audit/intent-journal.js';
import { AuditWriter } from '../src/audit/writer.js';
import { sodiumReady } from '../src/crypto/aead.js';
import { Keyring } from '../src/crypto/keyring.js';
import type { StorageWrite } from '../src/storage/backend.js';
import { LmdbBackend } from '../src/storage/lmdb-backend.js';
import { AuditRecords } from '../src/store/audit-records.js';
import { RecordSeal } from '../src/store/record-seal.js';
import { describeMachine } from './machine.js';

/** Record keys for this registry alone (the server derives its own from the keyring). */
const RECORD_KEYS = { seal: randomBytes(32), mac: randomBytes(32) };
await sodiumReady();
const KEYS = chainKeysOf(Keyring.generate(Date.now()));

const mode = process.argv[2] ?? 'intent';
if (mode !== 'none' && mode !== 'request' && mode !== 'intent') {
  console.error('usage: audit-path.js none|request|intent');
  process.exit(2);
}
const OPS = 20_000;
const dir = mkdtempSync(join(tmpdir(), 'coffer-audit-path-'));
const storage = new LmdbBackend({ path: join(dir, 'lmdb') });
const chain = 'bench-1-auditpath';
const records = new AuditRecords(storage, new RecordSeal(() => RECORD_KEYS));
const journal = new IntentJournal(records, chain);
const writer = new AuditWriter({
  sink: new FileSink({ dir: join(dir, 'audit'), chain, maxFileBytes: 64 << 20 }),
  chain,
  keys: () => KEYS,
  registry: records,
  checkpointEvery: 1000,
  checkpointMs: 10_000,
  now: Date.now,
  syncMs: 50,
  onSynced: (seq) => journal.synced(seq),
});
const audit = new AuditLog({ writer, failOpen: false, log: pino({ level: 'silent' }), journal });
await audit.event('bench.start');
const value = Buffer.alloc(200, 7);
let next = 0;

async function write(): Promise<void> {
  const i = next++;
  const fields = {
    request_id: `req${i}`,
    token_id: 'BenchTokenId0000',
    action: 'write',
    namespace: 'bench/writes',
    key: `k${i}`,
  };
  const copies: StorageWrite[] = mode === 'intent' ? ((await audit.intent(fields)) ?? []) : [];
  await storage.atomic([Buffer.from(`C${i}`)], () => ({
    writes: [
      { op: 'put', key: Buffer.from(`V${i}`), value },
      { op: 'put', key: Buffer.from(`M${i}`), value: value.subarray(0, 20) },
      { op: 'put', key: Buffer.from(`C${i}`), value: value.subarray(0, 4) },
      ...copies,
    ],
    result: undefined,
  }));
  if (mode !== 'none') {
    await audit.request({
      kind: 'request',
      ...fields,
      role: 'writer',
      client: '127.0.0.1',
      method: 'PUT',
      route: '/v1/kv/{path}',
      version: 1,
      outcome: { status: 201, code: null },
      duration_ms: 1.234,
    });
  }
}

console.log(`${mode} — ${describeMachine()}`);
for (let round = 0; round <= 3; round++) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  let issued = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (issued < OPS) {
        issued++;
        await write();
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  // Round 0 warms up the JIT and the store.
  if (round > 0)
    console.log(
      `round ${round}: ${((used.user + used.system) / OPS).toFixed(1)} µs CPU per write, ${(((performance.now() - started) * 1000) / OPS).toFixed(1)} µs wall`,
    );
}
await audit.close();
await storage.close();
rmSync(dir, { recursive: true, force: true });
