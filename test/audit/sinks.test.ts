import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { expect } from 'chai';
import type { ChainKeys } from '../../src/audit/chain-keys.js';
import { FileSink } from '../../src/audit/file-sink.js';
import { StdoutSink } from '../../src/audit/stdout-sink.js';
import { verifyAudit } from '../../src/audit/verify.js';
import { AuditWriter } from '../../src/audit/writer.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { RecordSeal } from '../../src/store/record-seal.js';
import { auditFiles } from '../support/audit-lines.js';
import { testChainKeys, thisWriter } from '../support/chain-keys.js';
import { tempDir } from '../support/harness.js';

const RECORD_KEYS = { seal: randomBytes(32), mac: randomBytes(32) };

describe('audit sinks: the files are the chain’s home, stdout a copy', () => {
  let dir: string;
  let storage: LmdbBackend;
  let registry: AuditRecords;
  let keys: ChainKeys;
  before(async () => {
    keys = await testChainKeys();
  });
  beforeEach(() => {
    dir = tempDir();
    storage = new LmdbBackend({ path: join(dir, 'lmdb') });
    registry = new AuditRecords(storage, new RecordSeal(() => RECORD_KEYS));
  });
  afterEach(async () => {
    await storage.close();
  });

  function writer(copy: StdoutSink, maxFileBytes: number): AuditWriter {
    return new AuditWriter({
      sink: new FileSink({ dir: join(dir, 'audit'), chain: 'c-1-sinks', maxFileBytes }),
      copies: [copy],
      chain: 'c-1-sinks',
      keys: () => keys,
      registry,
      checkpointEvery: 7,
      checkpointMs: 60_000,
      now: Date.now,
      syncMs: 20,
    });
  }

  it('copies every line to stdout exactly as the files hold it, in chain order, across file rolls', async () => {
    const out = new PassThrough();
    const copied: Buffer[] = [];
    out.on('data', (chunk: Buffer) => copied.push(chunk));
    const w = writer(new StdoutSink(out), 2048);
    await registry.started('c-1-sinks', Date.now(), thisWriter());
    // Batches of five: a file rolls only between batches.
    for (let i = 0; i < 60; i += 5) {
      const batch = [0, 1, 2, 3, 4].map((j) =>
        w.append({ kind: 'event', event: 'test.entry', n: i + j }, j % 2 ? 'written' : 'durable'),
      );
      await Promise.all(batch);
    }
    await w.close();

    const files = auditFiles(join(dir, 'audit'));
    expect(files.length, 'rolled to new files at max bytes').to.be.greaterThan(2);
    const inFiles = files.map((f) => readFileSync(f, 'utf8')).join('');
    expect(Buffer.concat(copied).toString('utf8')).to.equal(inFiles);
    const seqs = inFiles
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { seq: number }).seq);
    expect(seqs).to.deep.equal(seqs.map((_, i) => i + 1));
    expect(
      verifyAudit(files, { keys, registry: await registry.chains(), now: Date.now() }),
    ).to.deep.include({
      intact: true,
    });
  });

  it('answers every entry when the stdout copy fails: a copy never refuses a request', async () => {
    const broken = new Writable({
      write(_chunk, _encoding, callback) {
        callback(new Error('EPIPE'));
      },
    });
    broken.on('error', () => undefined);
    const throwing = {
      write: () => {
        throw new Error('stdout closed');
      },
    } as unknown as NodeJS.WritableStream;
    for (const out of [broken, throwing]) {
      const w = writer(new StdoutSink(out), 1 << 20);
      await w.append({ kind: 'event', event: 'test.entry' }, 'durable');
      await w.append({ kind: 'event', event: 'test.entry' }, 'written');
      expect(w.failing).to.equal(false);
      await w.close();
      dir = tempDir();
    }
  });
});
