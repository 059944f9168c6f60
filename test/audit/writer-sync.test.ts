import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import type { ChainKeys } from '../../src/audit/chain-keys.js';
import { FileSink } from '../../src/audit/file-sink.js';
import { AuditStream } from '../../src/audit/streams/audit-stream.js';
import { SHIP_MS } from '../../src/audit/streams/chain-streams.js';
import { parseStreams } from '../../src/audit/streams/stream-spec.js';
import { transportFor } from '../../src/audit/streams/transports.js';
import { AuditWriter } from '../../src/audit/writer.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { RecordSeal } from '../../src/store/record-seal.js';
import { auditFiles } from '../support/audit-lines.js';
import { startAuditReceiver } from '../support/audit-receiver.js';
import { testChainKeys } from '../support/chain-keys.js';
import { type DatasyncProbe, probeDatasyncs } from '../support/datasync-probe.js';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/harness.js';

/** Record keys for this registry alone (the server derives its own from the keyring). */
const RECORD_KEYS = { seal: randomBytes(32), mac: randomBytes(32) };
let KEYS: ChainKeys;

/** An audit writer of chain `chain` in `dir`, with its store, syncing written lines within `syncMs`. */
function writerIn(
  dir: string,
  chain: string,
  syncMs: number,
  sealBatches = false,
  streams: AuditStream[] = [],
): { storage: LmdbBackend; writer: AuditWriter } {
  const storage = new LmdbBackend({ path: join(dir, 'lmdb') });
  const writer = new AuditWriter({
    sealBatches,
    streams,
    sink: new FileSink({ dir: join(dir, 'audit'), chain, maxFileBytes: 1 << 20 }),
    chain,
    keys: () => KEYS,
    registry: new AuditRecords(storage, new RecordSeal(() => RECORD_KEYS)),
    checkpointEvery: 1000,
    checkpointMs: 60_000,
    now: Date.now,
    syncMs,
  });
  return { storage, writer };
}

describe('audit writer: when lines reach the disk', () => {
  // Every fdatasync of every FileHandle: the writer's own calls, observed from outside.
  let probe: DatasyncProbe;
  let syncs: number[];
  before(async () => {
    KEYS = await testChainKeys();
    probe = await probeDatasyncs();
    syncs = probe.times;
  });
  after(() => probe.restore());

  it('answers a read entry once it is written, syncs it within sync_ms; a durable entry waits for its sync', async () => {
    const { storage, writer } = writerIn(tempDir(), 'test-1-sync', 40);
    try {
      await writer.append({ kind: 'event', event: 'first' }); // opens the file (durable)
      syncs.length = 0;
      const started = performance.now();
      await writer.append({ kind: 'request', action: 'read' }, 'written');
      const answeredAt = performance.now();
      expect(syncs.filter((t) => t >= started && t <= answeredAt)).to.have.length(0);
      await eventually(() => syncs.length > 0, {
        timeout: 1000,
        interval: 5,
        what: 'a timed sync',
      });
      expect(syncs).to.have.length(1);
      expect(syncs[0]! - answeredAt).to.be.within(0, 120);

      syncs.length = 0;
      const before = performance.now();
      await writer.append({ kind: 'intent', action: 'write' });
      expect(syncs).to.have.length(1);
      expect(syncs[0]!).to.be.at.least(before);
    } finally {
      await writer.close();
      await storage.close();
    }
  });

  it('keeps writing and answering while a timed sync is slow', async () => {
    const { storage, writer } = writerIn(tempDir(), 'test-2-sync', 10);
    try {
      await writer.append({ kind: 'event', event: 'first' });
      probe.delayMs = 400;
      syncs.length = 0;
      await writer.append({ kind: 'request', action: 'read' }, 'written');
      // The timed sync has begun, and takes 400 ms.
      await eventually(() => syncs.length > 0, {
        timeout: 1000,
        interval: 5,
        what: 'a timed sync',
      });
      expect(syncs).to.have.length(1);
      const started = performance.now();
      await writer.append({ kind: 'request', action: 'read' }, 'written');
      // Written and answered while the sync is still running: the sync does not hold the writing loop.
      expect(performance.now() - started).to.be.below(200);
    } finally {
      probe.delayMs = 0;
      await writer.close();
      await storage.close();
    }
  });

  it('with sealBatches, a batch with a change ends with a signed checkpoint before its answers go out, reads are sealed within SHIP_MS (when streams are sent lines) and wait for neither, and the store records only the other checkpoints', async () => {
    const dir = tempDir();
    const { storage, writer } = writerIn(dir, 'test-3-seal', 40, true);
    const records = new AuditRecords(storage, new RecordSeal(() => RECORD_KEYS));
    const lines = () =>
      auditFiles(join(dir, 'audit'))
        .flatMap((f) => readFileSync(f, 'utf8').split('\n'))
        .filter(Boolean)
        .map(
          (l) => JSON.parse(l) as { seq: number; kind: string; batch?: boolean; action?: string },
        );
    try {
      await records.started(
        'test-3-seal',
        Date.now(),
        { host: 'test', pid: process.pid, checkpoint_ms: 60_000 },
        false,
      );
      // A durable entry (a change's) is answered with its seal after it, in the file.
      await writer.append({ kind: 'event', event: 'first' });
      expect(lines().map((e) => e.kind)).to.deep.equal(['event', 'checkpoint']);
      expect(lines().at(-1)).to.include({ batch: true });
      syncs.length = 0;
      const started = performance.now();
      await Promise.all([
        writer.append({ kind: 'request', action: 'read' }, 'written'),
        writer.append({ kind: 'request', action: 'read' }, 'written'),
      ]);
      const answeredAt = performance.now();
      // Reads wait for no sync and no signature: answered once in the file, sealed within SHIP_MS.
      expect(syncs.filter((t) => t >= started && t <= answeredAt)).to.have.length(0);
      expect(lines().map((e) => e.kind)).to.deep.equal([
        'event',
        'checkpoint',
        'request',
        'request',
      ]);
      await eventually(() => lines().length === 5, { timeout: 1000, interval: 5, what: 'a seal' });
      expect(performance.now() - answeredAt).to.be.below(SHIP_MS + 150);
      expect(lines().at(-1)).to.include({ kind: 'checkpoint', batch: true });
      // One seal for both reads' lines, and nothing more while nothing is written.
      await new Promise((r) => setTimeout(r, SHIP_MS + 50));
      expect(lines()).to.have.length(5);
      // The store records no seal.
      expect((await records.chains())[0]!.last_checkpoint).to.equal(null);
      await writer.checkpoint();
      const recorded = lines().at(-1)!;
      expect(recorded.kind).to.equal('checkpoint');
      expect(recorded.batch).to.equal(undefined);
      // (The store records it just after its waiters are answered.)
      await eventually(
        async () => (await records.chains())[0]?.last_checkpoint?.seq === recorded.seq,
        { what: 'the checkpoint recorded' },
      );
    } finally {
      await writer.close();
      await storage.close();
    }
  });

  it("counts the lines gathered for a stream in its lag until they are shipped, within SHIP_MS, under the writer's seal", async () => {
    const receiver = await startAuditReceiver();
    const [spec] = parseStreams(receiver.url);
    const stream = new AuditStream(spec!, transportFor(spec!), pino({ level: 'silent' }));
    const { storage, writer } = writerIn(tempDir(), 'test-4-lag', 40, true, [stream]);
    try {
      await writer.append({ kind: 'event', event: 'first' });
      await Promise.all(
        Array.from({ length: 5 }, () =>
          writer.append({ kind: 'request', action: 'read' }, 'written'),
        ),
      );
      // Written locally and not yet delivered: gathered for the next shipment.
      expect(writer.streamStates()[0]!.lag).to.be.at.least(5);
      expect(receiver.lines).to.have.length(0);
      await eventually(() => writer.streamStates()[0]!.lag === 0, {
        timeout: SHIP_MS + 1_000,
        interval: 5,
        what: 'the lines shipped',
      });
      const kinds = receiver.lines.map((l) => (JSON.parse(l) as { kind: string }).kind);
      expect(kinds.filter((k) => k === 'request')).to.have.length(5);
      expect(kinds.at(-1)).to.equal('checkpoint');
    } finally {
      await writer.close();
      await storage.close();
      await receiver.close();
    }
  });
});
