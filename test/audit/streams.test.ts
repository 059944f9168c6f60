import { cpSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '../../src/config/load.js';
import { openStorage } from '../../src/storage/registry.js';
import { auditChainKey, auditLinesKey, auditLinesRange } from '../../src/store/layout.js';
import { auditFiles, auditLines } from '../support/audit-lines.js';
import { type AuditReceiver, startAuditReceiver } from '../support/audit-receiver.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { killAll, runCoffer, serveSettings, startProcess } from '../support/process.js';
import { type SyslogReceiver, startSyslogReceiver } from '../support/rsyslog.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';
import { requirePackage } from '../support/system-packages.js';

/** Every line of the audit files in `dir`, by chain, in seq order. */
function localChains(dir: string): Map<string, string[]> {
  const chains = new Map<string, string[]>();
  for (const file of auditFiles(dir).sort())
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line === '') continue;
      const { chain } = JSON.parse(line) as { chain: string };
      chains.set(chain, [...(chains.get(chain) ?? []), line]);
    }
  for (const [chain, lines] of chains)
    chains.set(
      chain,
      lines.sort((a, b) => (JSON.parse(a).seq as number) - (JSON.parse(b).seq as number)),
    );
  return chains;
}

/** The lines received, by chain, in the order received. */
function receivedChains(lines: readonly string[]): Map<string, string[]> {
  const chains = new Map<string, string[]>();
  for (const line of lines) {
    const { chain } = JSON.parse(line) as { chain: string };
    chains.set(chain, [...(chains.get(chain) ?? []), line]);
  }
  return chains;
}

describe('audit streams (COFFER_AUDIT_STREAMS)', function () {
  this.timeout(120_000);
  let receiver: AuditReceiver;
  beforeEach(async () => {
    receiver = await startAuditReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('ships every line of every chain, checkpoints included, in order; an outage loses, duplicates and reorders nothing', async () => {
    const tokenFile = join(tempDir(), 'siem.token');
    writeFileSync(tokenFile, 'siem-ingest-credential\n');
    const c = await startTestCoffer({
      dataDir: tempDir(),
      env: {
        COFFER_AUDIT_STREAMS: `${receiver.url}?name=siem&bearer_file=${tokenFile}`,
        COFFER_AUDIT_CHECKPOINT_EVERY: '7',
      },
    });
    const auditDir = c.config.audit.dir!;
    try {
      for (let i = 0; i < 10; i++)
        expect((await c.put(`ship/k${i}`, `v${i}`)).status).to.equal(201);
      await eventually(async () => receiver.lines.length > 10, { what: 'lines shipped' });
      receiver.down = true;
      // Not required: the outage refuses nothing.
      for (let i = 0; i < 20; i++) {
        expect((await c.put(`ship/k${i}`, `w${i}`)).status).to.be.oneOf([200, 201]);
        expect((await c.call('GET', `/v1/kv/ship/k${i}`)).status).to.equal(200);
      }
      // The outage shows, once the stream next sends (lines gather for up to SHIP_MS): in the
      // metrics (per stream, by its name) and as a health detail.
      let metrics = '';
      await eventually(
        async () => {
          metrics = (await c.call('GET', '/v1/sys/metrics')).text;
          return /coffer_audit_stream_up\{stream="siem"\} 0/.test(metrics);
        },
        { what: 'the outage seen in the metrics', timeout: 5_000 },
      );
      const lag = Number(/coffer_audit_stream_lag_lines\{stream="siem"\} (\d+)/.exec(metrics)?.[1]);
      expect(lag).to.be.greaterThan(20);
      const health = await c.call('GET', '/v1/sys/health', { token: null });
      expect(health.status, 'a stream that is not required refuses nothing').to.equal(200);
      expect(health.body.audit).to.include({ writable: true, streams_down: 1 });
      const during = receiver.lines.length;
      receiver.down = false;
      for (let i = 0; i < 5; i++)
        expect((await c.call('GET', '/v1/kv/ship/k1')).status).to.equal(200);
      await eventually(
        async () => receiver.lines.length >= [...localChains(auditDir).values()].flat().length,
        { what: 'the backlog shipped after the outage', timeout: 20_000 },
      );
      expect(receiver.lines.length).to.be.greaterThan(during);
      const after = (await c.call('GET', '/v1/sys/metrics')).text;
      expect(after).to.match(/coffer_audit_stream_up\{stream="siem"\} 1/);
      expect(
        (await c.call('GET', '/v1/sys/health', { token: null })).body.audit.streams_down,
      ).to.equal(0);
    } finally {
      await c.close();
    }
    const local = localChains(auditDir);
    const received = receivedChains(receiver.lines);
    // Every chain, line for line as in its files: nothing lost, nothing twice, nothing out of order.
    expect([...received.keys()].sort()).to.deep.equal([...local.keys()].sort());
    for (const [chain, lines] of local) expect(received.get(chain), chain).to.deep.equal(lines);
    expect(receiver.lines.some((l) => JSON.parse(l).kind === 'checkpoint')).to.equal(true);
    expect(new Set(receiver.authorizations)).to.deep.equal(
      new Set(['Bearer siem-ingest-credential']),
    );
    // The shipped copy holds the local log as it is.
    const shipped = receiver.save(join(tempDir(), 'shipped.ndjson'));
    const env = {
      COFFER_DATA_DIR: c.config.data_dir,
      COFFER_MASTER_KEY_FILE: c.config.master_key_file,
    };
    const verify = await runCoffer(['audit', 'verify', '--against', shipped], env);
    expect(verify.code, verify.stdout).to.equal(0);
    expect(verify.stdout).to.match(/as shipped: all \d+ entries of \d+ chains/);
    // Every batch ended with a signed checkpoint before its answers went out: each shipped entry is under
    // a signature the shipped copy itself holds.
    const entries = receiver.lines.filter((l) => JSON.parse(l).kind !== 'checkpoint').length;
    expect(verify.stdout).to.include(
      `; ${entries} of them under a shipped checkpoint whose signature verified`,
    );
  });

  it('a stream that is not required is sent lines sealed: under steady reads and writes, each batch it takes ends with a signed checkpoint, within about SHIP_MS (250 ms) of its lines', async () => {
    const c = await startTestCoffer({
      dataDir: tempDir(),
      env: { COFFER_AUDIT_STREAMS: receiver.url },
    });
    let reads = 0;
    try {
      expect((await c.put('sealed/k', 'v')).status).to.equal(201);
      // Requests without a pause, so that lines are written as the stream is shipped them.
      const until = performance.now() + 2_000;
      const reader = async () => {
        while (performance.now() < until) {
          expect((await c.call('GET', '/v1/kv/sealed/k')).status).to.equal(200);
          reads += 1;
        }
      };
      const writer = async () => {
        for (let i = 0; performance.now() < until; i++)
          expect((await c.put('sealed/k', `v${i}`)).status).to.equal(200);
      };
      await Promise.all([reader(), reader(), reader(), writer()]);
      const answered = performance.now();
      const local = () => [...localChains(c.config.audit.dir!).values()].flat().length;
      await eventually(async () => receiver.lines.length === local(), {
        what: 'every line shipped',
        timeout: 2_000,
        interval: 5,
      });
      // Gathered for at most SHIP_MS, then sealed and sent (the machine's own delays on top).
      expect(performance.now() - answered).to.be.below(1_000);
    } finally {
      await c.close();
    }
    expect(receiver.batches.length).to.be.greaterThan(5);
    for (const batch of receiver.batches) {
      const last = JSON.parse(batch.at(-1)!) as { kind: string; sig?: string };
      expect(last.kind, batch.at(-1)).to.equal('checkpoint');
      expect(last.sig).to.match(/^[0-9a-f]{128}$/);
    }
    const shipped = receiver.lines.map((l) => JSON.parse(l) as { kind: string; action?: string });
    expect(shipped.filter((e) => e.kind === 'request' && e.action === 'read')).to.have.length(
      reads,
    );
  });

  it("a change is under a signed checkpoint before its answer goes out: a kill -9 after it leaves no unsigned line, and a line changed in the shipped copy is named as the copy's fault", async () => {
    const { root, env } = serveSettings(1, { COFFER_AUDIT_STREAMS: receiver.url });
    const p = await startProcess(env);
    for (let i = 0; i < 6; i++) {
      await send(p.url, 'PUT', `/v1/kv/seal/k${i}`, root, { value: `v${i}`, type: 'secret' });
      await send(p.url, 'GET', `/v1/kv/seal/k${i}`, root);
    }
    // The last answer a change's: its seal covers it and every line before it.
    await send(p.url, 'PUT', '/v1/kv/seal/last', root, { value: 'v', type: 'secret' });
    const auditDir = join(env.COFFER_DATA_DIR, 'audit');
    await eventually(
      async () => receiver.lines.length >= [...localChains(auditDir).values()].flat().length,
      { what: 'everything shipped' },
    );
    await killAll(p);
    // Each chain that answered a request ends with a checkpoint: no line of it is left unsigned.
    for (const [chain, lines] of localChains(auditDir))
      expect(JSON.parse(lines.at(-1)!).kind, chain).to.equal('checkpoint');
    const local = await runCoffer(['audit', 'verify'], env);
    expect(local.code, local.stdout).to.equal(0);
    expect(local.stdout).to.not.include('not yet covered by a checkpoint');
    const key = /public key ([0-9a-f]{64})/.exec(local.stdout)![1]!;
    const shipped = receiver.save(join(tempDir(), 'shipped.ndjson'));
    const held = await runCoffer(
      ['audit', 'verify', '--public-key', key, '--against', shipped],
      env,
    );
    expect(held.code, held.stdout).to.equal(0);
    const entries = receiver.lines.filter((l) => JSON.parse(l).kind !== 'checkpoint').length;
    expect(held.stdout).to.include(`; ${entries} of them under a shipped checkpoint`);
    // Held against the shipped copy, the verdict no longer rests on this machine alone.
    expect(held.stdout).to.not.include('an older copy verifies too');
    expect(local.stdout).to.include('an older copy verifies too');

    // Someone who reaches the receiver changes a shipped read (a syslog port takes lines from anyone):
    // the copy's signatures no longer hold, and verify says the fault is the copy's, not the log's.
    const lines = readFileSync(shipped, 'utf8').split('\n').filter(Boolean);
    const readAt = lines.findIndex((l) => JSON.parse(l).action === 'read');
    const changed = lines.map((l, i) => (i === readAt ? l.replace('"key":"k', '"key":"x') : l));
    expect(changed[readAt]).to.not.equal(lines[readAt]);
    const forged = join(tempDir(), 'forged.ndjson');
    writeFileSync(forged, `${changed.join('\n')}\n`);
    const refused = await runCoffer(
      ['audit', 'verify', '--public-key', key, '--against', forged],
      env,
    );
    expect(refused.code, refused.stdout).to.equal(1);
    const { chain, seq } = JSON.parse(lines[readAt]!) as { chain: string; seq: number };
    const sealing = lines
      .map((l) => JSON.parse(l) as { chain: string; seq: number; kind: string })
      .find((e) => e.chain === chain && e.seq > seq && e.kind === 'checkpoint')!;
    expect(refused.stdout).to.include(
      `SHIPPED COPY NOT AS SIGNED: chain ${chain} seq ${sealing.seq}: the shipped entries before this shipped checkpoint are not the ones it signed`,
    );
    expect(refused.stdout).to.not.include('NOT AS SHIPPED');
  });

  it('a required stream holds each answer until it has the line: down, requests are refused 503 and change nothing; back, they are served', async () => {
    const c = await startTestCoffer({
      dataDir: tempDir(),
      env: { COFFER_AUDIT_STREAMS: `${receiver.url}?required=true` },
    });
    const refusedAnswers: Awaited<ReturnType<typeof c.put>>[] = [];
    try {
      expect((await c.put('req/k', 'one')).status).to.equal(201);
      const put = await c.put('req/k', 'two');
      expect(put.status).to.equal(200);
      // The answer came after the stream had the request's line.
      const id = put.headers.get('x-request-id');
      expect(
        receiver.lines.some(
          (l) => JSON.parse(l).request_id === id && JSON.parse(l).kind === 'request',
        ),
      ).to.equal(true);

      receiver.down = true;
      const refused = await c.put('req/k', 'three');
      expect(refused.status).to.equal(503);
      expect(refused.body.code).to.equal('audit_unavailable');
      expect(refused.headers.get('retry-after')).to.equal('1');
      // While it is down, requests are refused before they act.
      const again = await c.put('req/k', 'four');
      expect(again.status).to.equal(503);
      refusedAnswers.push(refused, again);
      const health = await c.call('GET', '/v1/sys/health', { token: null });
      expect(health.status).to.equal(503);

      receiver.down = false;
      await eventually(async () => (await c.call('GET', '/v1/kv/req/k')).status === 200, {
        what: 'served again once the stream takes lines',
        timeout: 15_000,
      });
      const now = await c.call('GET', '/v1/kv/req/k');
      expect(now.body.value).to.be.oneOf(['two', 'three']);
      expect(now.body.value).not.to.equal('four');
    } finally {
      await c.close();
    }
    const entries = auditLines(c.config.audit.dir!);
    // Each refused answer's line says what the client got: its own outcome, once the stream is known to
    // be down; the first request after the stream went down was written before that was known (its line
    // says what the handler meant), and an audit.refused entry after it names its seq (writer.ts).
    const refusedSeqs = new Set(
      entries
        .filter((e) => e.kind === 'event' && e.event === 'audit.refused')
        .flatMap((e) => e.refused_seqs as number[]),
    );
    for (const answer of refusedAnswers) {
      const line = entries.find(
        (e) => e.kind === 'request' && e.request_id === answer.headers.get('x-request-id'),
      );
      expect(line, 'the refused request has its line').to.not.equal(undefined);
      const outcome = line!.outcome as { status?: number; code?: string };
      if (!refusedSeqs.has(line!.seq))
        expect(outcome).to.include({ status: 503, code: 'audit_unavailable' });
    }
    // Refused or not, every line reached the stream once it was back, in order.
    const local = localChains(c.config.audit.dir!);
    const received = receivedChains(receiver.lines);
    for (const [chain, lines] of local) expect(received.get(chain), chain).to.deep.equal(lines);
    const verify = await runCoffer(['audit', 'verify'], {
      COFFER_DATA_DIR: c.config.data_dir,
      COFFER_MASTER_KEY_FILE: c.config.master_key_file,
    });
    expect(verify.code, verify.stdout).to.equal(0);
  });

  it('lines that waited for a stream when their server stopped reach it with the next start: nothing is left behind across a restart', async () => {
    const { root, env } = serveSettings(1, { COFFER_AUDIT_STREAMS: receiver.url });
    const auditDir = join(env.COFFER_DATA_DIR, 'audit');
    let p = await startProcess(env);
    await send(p.url, 'PUT', '/v1/kv/later/k', root, { value: 'v1', type: 'secret' });
    receiver.down = true;
    for (let i = 0; i < 10; i++) await send(p.url, 'GET', '/v1/kv/later/k', root);
    await send(p.url, 'PUT', '/v1/kv/later/k', root, { value: 'v2', type: 'secret' });
    await p.stop();
    const before = localChains(auditDir);
    const shippedBefore = receivedChains(receiver.lines);
    const behind = [...before].filter(
      ([chain, lines]) => (shippedBefore.get(chain)?.length ?? 0) < lines.length,
    );
    expect(behind.length, 'the stopped chains left lines behind').to.be.greaterThan(0);

    receiver.down = false;
    p = await startProcess(env);
    await send(p.url, 'GET', '/v1/kv/later/k', root);
    await p.stop();
    const local = localChains(auditDir);
    const received = receivedChains(receiver.lines);
    // Every chain, each line once at least, in order; the stopped chains' tails after what they had.
    for (const [chain, lines] of local) {
      const got = received.get(chain) ?? [];
      expect([...new Set(got)], chain).to.deep.equal(lines);
    }
    const shipped = receiver.save(join(tempDir(), 'shipped.ndjson'));
    const held = await runCoffer(['audit', 'verify', '--against', shipped], env);
    expect(held.code, held.stdout).to.equal(0);
  });

  it('refuses to start with a stream it cannot read, naming it by position and never printing its URL', async () => {
    const { env } = serveSettings(1, {
      COFFER_AUDIT_STREAMS: 'stdout:,https://user:hunter2@siem.example/x?bearer_file=/nonexistent',
    });
    const started = await runCoffer(['serve'], env);
    expect(started.code).to.not.equal(0);
    expect(started.stderr).to.include('COFFER_AUDIT_STREAMS: stream 2');
    expect(started.stderr + started.stdout).not.to.include('hunter2');
    const plain = await runCoffer(['serve'], {
      ...env,
      COFFER_AUDIT_STREAMS: 'http://siem.example/x',
    });
    expect(plain.stderr).to.include('plain http is taken only to this machine');
  });

  describe('what an attacker who writes the data directory does, held against the shipped copy', () => {
    it('kill -9, the chain cut back to its last recorded checkpoint before the next start: local verify says intact; --against names the first missing seq', async () => {
      const { root, env } = serveSettings(1, {
        COFFER_AUDIT_STREAMS: receiver.url,
        COFFER_AUDIT_CHECKPOINT_EVERY: '6',
      });
      const p = await startProcess(env);
      for (let i = 0; i < 8; i++)
        await send(p.url, 'PUT', `/v1/kv/cut/k${i}`, root, { value: `v${i}`, type: 'secret' });
      for (let i = 0; i < 5; i++) await send(p.url, 'GET', '/v1/kv/cut/k1', root);
      const auditDir = join(env.COFFER_DATA_DIR, 'audit');
      await eventually(
        async () => receiver.lines.length >= [...localChains(auditDir).values()].flat().length,
        { what: 'everything shipped' },
      );
      await killAll(p);
      // The worker's chain (the one with the reads) cut back to just after the last checkpoint the store
      // records. (With a stream, the chain also has checkpoints of its own, seals, which the store does
      // not record.)
      const reads = auditLines(auditDir).filter((e) => e.action === 'read');
      const chain = reads[0]!.chain as string;
      const file = auditFiles(auditDir).find((f) => f.includes(chain))!;
      const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
      const lastCheckpoint = lines
        .map((l) => JSON.parse(l))
        .map((entry) => entry.kind === 'checkpoint' && entry.batch !== true)
        .lastIndexOf(true);
      const kept = lines.slice(0, lastCheckpoint + 1);
      expect(kept.length).to.be.lessThan(lines.length);
      truncateSync(file, Buffer.byteLength(kept.map((l) => `${l}\n`).join('')));
      // The next start closes the chain at the cut, and stops.
      await (await startProcess(env)).stop();

      const shipped = receiver.save(join(tempDir(), 'shipped.ndjson'));
      const local = await runCoffer(['audit', 'verify'], env);
      expect(local.stdout, local.stdout).to.match(/^intact: /m);
      const held = await runCoffer(['audit', 'verify', '--against', shipped], env);
      expect(held.code, held.stdout).to.equal(1);
      const firstMissing = JSON.parse(lines[lastCheckpoint + 1]!).seq;
      expect(held.stdout).to.include(`NOT AS SHIPPED: chain ${chain} seq ${firstMissing}: missing`);
      // The same with the public key alone: no secret needed.
      const key = /public key ([0-9a-f]{64})/.exec(local.stdout)![1]!;
      const pub = await runCoffer(
        ['audit', 'verify', '--public-key', key, '--against', shipped],
        env,
      );
      expect(pub.code).to.equal(1);
      expect(pub.stdout).to.include(`NOT AS SHIPPED: chain ${chain} seq ${firstMissing}`);
    });

    it("a chain's registry record put back from an older copy and its file cut to that record's checkpoint: --against names the first cut seq", async () => {
      const { root, env } = serveSettings(1, {
        COFFER_AUDIT_STREAMS: receiver.url,
        COFFER_AUDIT_CHECKPOINT_EVERY: '5',
      });
      const p = await startProcess(env);
      for (let i = 0; i < 4; i++)
        await send(p.url, 'PUT', `/v1/kv/reg/k${i}`, root, { value: `v${i}`, type: 'secret' });
      const auditDir = join(env.COFFER_DATA_DIR, 'audit');
      const chain = auditLines(auditDir).find((e) => e.action === 'write')!.chain as string;
      // The attacker's older copy of the chain's record (LMDB lets a second process read it).
      const config = loadConfig({ ...env, COFFER_LOG_LEVEL: 'silent' });
      const readStore = await openStorage(config);
      const older = await readStore.get(auditChainKey(chain));
      await readStore.close();
      // The record names the chain's newest checkpoint the store records (a batch's seal it does not).
      const olderCheckpoint = auditLines(auditDir)
        .filter((e) => e.chain === chain && e.kind === 'checkpoint' && e.batch !== true)
        .at(-1)!.seq;
      expect(older).to.not.equal(undefined);
      for (let i = 0; i < 5; i++) await send(p.url, 'GET', '/v1/kv/reg/k1', root);
      await p.stop();
      await eventually(
        async () => receiver.lines.length >= [...localChains(auditDir).values()].flat().length,
        { what: 'everything shipped' },
      );
      const file = auditFiles(auditDir).find((f) => f.includes(chain))!;
      const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
      const cut = lines.findIndex((l) => JSON.parse(l).seq === olderCheckpoint);
      truncateSync(
        file,
        Buffer.byteLength(
          lines
            .slice(0, cut + 1)
            .map((l) => `${l}\n`)
            .join(''),
        ),
      );
      const store = await openStorage(config);
      await store.atomic([], () => ({
        writes: [{ op: 'put', key: auditChainKey(chain), value: older! }],
        result: undefined,
      }));
      await store.close();

      const shipped = receiver.save(join(tempDir(), 'shipped.ndjson'));
      const held = await runCoffer(['audit', 'verify', '--against', shipped], env);
      expect(held.code, held.stdout).to.equal(1);
      expect(held.stdout).to.include(
        `NOT AS SHIPPED: chain ${chain} seq ${JSON.parse(lines[cut + 1]!).seq}: missing`,
      );
    });

    it('an older copy of the whole data directory put back: local verify says intact; --against names every chain it lost', async () => {
      const { root, env, dir } = serveSettings(1, { COFFER_AUDIT_STREAMS: receiver.url });
      let p = await startProcess(env);
      await send(p.url, 'PUT', '/v1/kv/old/k', root, { value: 'v1', type: 'secret' });
      await p.stop();
      const backup = join(dir, 'backup');
      cpSync(env.COFFER_DATA_DIR, backup, { recursive: true });
      p = await startProcess(env);
      await send(p.url, 'PUT', '/v1/kv/old/k', root, { value: 'v2', type: 'secret' });
      for (let i = 0; i < 5; i++) await send(p.url, 'GET', '/v1/kv/old/k', root);
      await p.stop();
      await eventually(
        async () =>
          receiver.lines.length >=
          [...localChains(join(env.COFFER_DATA_DIR, 'audit')).values()].flat().length,
        { what: 'everything shipped' },
      );
      const lost = [...localChains(join(env.COFFER_DATA_DIR, 'audit')).keys()].filter(
        (chain) => !localChains(join(backup, 'audit')).has(chain),
      );
      expect(lost.length).to.be.greaterThan(0);
      rmSync(env.COFFER_DATA_DIR, { recursive: true });
      cpSync(backup, env.COFFER_DATA_DIR, { recursive: true });

      const shipped = receiver.save(join(tempDir(), 'shipped.ndjson'));
      const local = await runCoffer(['audit', 'verify'], env);
      expect(local.stdout).to.match(/^intact: /m);
      const held = await runCoffer(['audit', 'verify', '--against', shipped], env);
      expect(held.code).to.equal(1);
      for (const chain of lost)
        expect(held.stdout).to.include(
          `NOT AS SHIPPED: chain ${chain} seq 1: the local log has no file of this chain`,
        );
    });
  });

  describe('to a real rsyslog, over TCP and TLS', () => {
    before(function () {
      requirePackage(this, 'rsyslog');
    });

    /** The entries in a syslog file, each once (a resent line is the same line), in the order first received. */
    function firstReceived(lines: readonly string[]): Map<string, string[]> {
      const seen = new Set<string>();
      const chains = new Map<string, string[]>();
      for (const raw of lines) {
        const line = raw.slice(raw.indexOf('{'));
        if (seen.has(line)) continue;
        seen.add(line);
        const { chain } = JSON.parse(line) as { chain: string };
        chains.set(chain, [...(chains.get(chain) ?? []), line]);
      }
      return chains;
    }

    it('ships every line, octet-counted, through an outage of both receivers: nothing lost or out of order; verify --against each file holds', async () => {
      const plain = await startSyslogReceiver(false);
      // Stopped whatever happens: an assertion failing below leaves no rsyslogd running.
      const receivers: SyslogReceiver[] = [plain];
      try {
        const tls = await startSyslogReceiver(true);
        receivers.push(tls);
        const c = await startTestCoffer({
          dataDir: tempDir(),
          env: {
            COFFER_AUDIT_STREAMS: `syslog+tcp://127.0.0.1:${plain.port},syslog+tls://127.0.0.1:${tls.port}?ca=${tls.ca}&name=tls`,
            COFFER_AUDIT_CHECKPOINT_EVERY: '9',
          },
        });
        const auditDir = c.config.audit.dir!;
        const all = () => [...localChains(auditDir).values()].flat();
        const complete = (received: readonly string[]) => {
          const got = new Set(received.map((l) => l.slice(l.indexOf('{'))));
          return all().every((line) => got.has(line));
        };
        try {
          // A value with a newline and a multi-byte character: octet counting keeps each line whole.
          for (let i = 0; i < 10; i++)
            expect((await c.put(`sys/k${i}`, `line one\nline two é ${i}`)).status).to.equal(201);
          await eventually(async () => complete(plain.lines()) && complete(tls.lines()), {
            what: 'both receivers have every line',
          });
          await plain.stop();
          await tls.stop();
          for (let i = 0; i < 15; i++) {
            expect((await c.put(`sys/k${i}`, `during ${i}`)).status).to.be.oneOf([200, 201]);
            expect((await c.call('GET', `/v1/kv/sys/k${i}`)).status).to.equal(200);
          }
          await plain.start();
          await tls.start();
          for (let i = 0; i < 5; i++)
            expect((await c.call('GET', '/v1/kv/sys/k1')).status).to.equal(200);
          await eventually(async () => complete(plain.lines()) && complete(tls.lines()), {
            what: 'both receivers have every line after the outage',
            timeout: 30_000,
          });
        } finally {
          await c.close();
        }
        await eventually(async () => complete(plain.lines()) && complete(tls.lines()), {
          what: 'the last lines',
        });
        await plain.stop();
        await tls.stop();
        const local = localChains(auditDir);
        for (const receiver of [plain, tls]) {
          const received = firstReceived(receiver.lines());
          for (const [chain, lines] of local)
            expect(received.get(chain), chain).to.deep.equal(lines);
          const held = await runCoffer(['audit', 'verify', '--against', receiver.file], {
            COFFER_DATA_DIR: c.config.data_dir,
            COFFER_MASTER_KEY_FILE: c.config.master_key_file,
          });
          expect(held.code, held.stdout).to.equal(0);
          expect(held.stdout).to.match(/as shipped: all \d+ entries/);
        }
      } finally {
        for (const receiver of receivers) await receiver.stop();
      }
    });
  });

  describe('on PostgreSQL, a database administrator alone', () => {
    before(async function () {
      await requirePostgres(this);
    });
    after(async () => {
      await dropTestSchemas();
    });

    it("puts back server B's chain record and deletes the store's copy of B's later lines: verify on A against B's shipped copy names B's chain", async () => {
      const schema = testSchema();
      const a = await startTestCoffer({ dataDir: tempDir(), env: pgEnv(schema) });
      const b = await secondServer(a, schema, PG_TEST_URL, {
        COFFER_AUDIT_STREAMS: receiver.url,
        COFFER_AUDIT_CHECKPOINT_EVERY: '5',
      });
      const db = new pg.Client({ connectionString: PG_TEST_URL });
      await db.connect();
      try {
        await b.put('dba/k', 'v1');
        const chainB = auditLines(b.config.audit.dir!).find((l) => l.action === 'write')!
          .chain as string;
        const recordKey = auditChainKey(chainB);
        const olderRecord = (
          await db.query<{ v: Buffer }>(`SELECT v FROM "${schema}".records WHERE k = $1`, [
            recordKey,
          ])
        ).rows[0]!.v;
        const seqThen = Math.max(
          ...auditLines(b.config.audit.dir!)
            .filter((l) => l.chain === chainB)
            .map((l) => l.seq as number),
        );
        for (let i = 0; i < 5; i++)
          expect((await b.call('GET', '/v1/kv/dba/k')).status).to.equal(200);
        await b.close();
        await eventually(async () => receiver.lines.some((l) => l.includes('"server.stop"')), {
          what: "B's chain shipped to its end",
        });
        // The DBA: B's record as it was, and the store's copy of B's lines after that point gone.
        const range = auditLinesRange(chainB);
        await db.query(`UPDATE "${schema}".records SET v = $2 WHERE k = $1`, [
          recordKey,
          olderRecord,
        ]);
        await db.query(`DELETE FROM "${schema}".records WHERE k > $1 AND k < $2`, [
          auditLinesKey(chainB, seqThen),
          range.end,
        ]);
        const shipped = receiver.save(join(tempDir(), 'b-shipped.ndjson'));
        const env = {
          ...pgEnv(schema),
          COFFER_DATA_DIR: a.config.data_dir,
          COFFER_MASTER_KEY_FILE: a.config.master_key_file,
        };
        const held = await runCoffer(['audit', 'verify', '--against', shipped], env);
        expect(held.code, held.stdout).to.equal(1);
        expect(held.stdout).to.match(
          new RegExp(`NOT AS SHIPPED: chain ${chainB} seq \\d+: missing`),
        );
      } finally {
        await db.end();
        await a.close();
      }
    });
  });
});
