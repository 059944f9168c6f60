import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { AUDIT_CHAINS_RANGE, AUDIT_COUNT_KEY, auditChainKey } from '../../src/store/layout.js';
import { type AuditLine, auditFiles, auditLines } from '../support/audit-lines.js';
import { startTestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import {
  type CofferProcess,
  killAll,
  runCoffer,
  serveSettings,
  startProcess,
} from '../support/process.js';

/** Deletes records of `range` (and `keys`) from a stopped store, as someone who can write its files would. */
async function deleteRecords(
  lmdb: string,
  range: { start: Uint8Array; end: Uint8Array },
  keys: Uint8Array[] = [],
): Promise<void> {
  const storage = new LmdbBackend({ path: lmdb });
  try {
    const gone: Uint8Array[] = [...keys];
    for await (const { key } of storage.scan(range)) gone.push(key);
    await storage.atomic([], () => ({
      writes: gone.map((key) => ({ op: 'delete' as const, key })),
      result: undefined,
    }));
  } finally {
    await storage.close();
  }
}

/**
 * The outside tester's rewrite: the chain's token.revoke and keyring.rotate entries, the requests that made
 * them, the server.stop line and the final checkpoint deleted; seq renumbered; every prev recomputed as a
 * plain SHA-256 (no key is needed for that).
 */
function rewriteWithoutKey(file: string, agedMs = 0): void {
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const parsed = lines
    .map((l) => JSON.parse(l) as AuditLine)
    .map(
      (e): AuditLine =>
        agedMs === 0 ? e : { ...e, ts: new Date(Date.parse(e.ts) - agedMs).toISOString() },
    );
  const gone = new Set(
    parsed
      .filter(
        (e) =>
          e.event === 'token.revoke' ||
          e.event === 'keyring.rotate' ||
          e.event === 'server.stop' ||
          e.action === 'token.revoke' ||
          e.action === 'keyring.rotate',
      )
      .map((e) => e.seq),
  );
  const last = parsed.at(-1)!;
  if (last.kind === 'checkpoint') gone.add(last.seq);
  const kept = parsed.filter((e) => !gone.has(e.seq));
  let prev = '0'.repeat(64);
  const out = kept.map((entry, i) => {
    const text = JSON.stringify({ ...entry, seq: i + 1, prev });
    prev = createHash('sha256').update(text).digest('hex');
    return text;
  });
  writeFileSync(file, `${out.join('\n')}\n`);
}

describe('the audit log from outside: a rewrite, a deleted chain, a cut, a killed server', function () {
  this.timeout(90_000);

  /** A server that revoked a token and rotated the keyring, then stopped; its settings. */
  async function auditedServer(): Promise<{ env: Record<string, string>; dir: string }> {
    const settings = serveSettings(1);
    const p = await startProcess(settings.env);
    const { token } = (
      await send(p.url, 'POST', '/v1/auth/token', settings.root, { role: 'reader' })
    ).body;
    expect(
      (await send(p.url, 'PUT', '/v1/kv/t/k', settings.root, { value: 'v', type: 'config' }))
        .status,
    ).to.equal(201);
    expect(
      (await send(p.url, 'DELETE', `/v1/auth/token/${token.slice(4, 20)}`, settings.root)).status,
    ).to.equal(204);
    expect((await send(p.url, 'POST', '/v1/sys/keyring/rotate', settings.root)).status).to.equal(
      200,
    );
    await p.stop();
    return { env: { ...settings.env, COFFER_LOG_LEVEL: 'silent' }, dir: settings.dir };
  }

  const verify = (env: Record<string, string>, ...args: string[]) =>
    runCoffer(['audit', 'verify', ...args], env);

  it("finds the outside tester's rewrite (entries deleted, seq renumbered, every prev recomputed, the chain records deleted): not intact", async () => {
    const { env, dir } = await auditedServer();
    const clean = await verify(env);
    expect(clean.code, clean.stdout).to.equal(0);
    const files = auditFiles(join(dir, 'data', 'audit'));
    // Yesterday's history, rewritten: older than any running server leaves its newest entries unsigned.
    for (const file of files) rewriteWithoutKey(file, 86_400_000);
    await deleteRecords(join(dir, 'data', 'lmdb'), AUDIT_CHAINS_RANGE);
    const run = await verify(env);
    expect(run.code).to.equal(1);
    expect(run.stdout).to.match(
      /^BROKEN: .*audit chain #1 of \d+ is missing: a chain was deleted/m,
    );
    // With the count deleted too, and this host's memory of it: the files' chains are unknown, and their
    // first recomputed link fails.
    await deleteRecords(join(dir, 'data', 'lmdb'), AUDIT_CHAINS_RANGE, [AUDIT_COUNT_KEY]);
    rmSync(join(dir, 'data', 'high-water'), { recursive: true, force: true });
    const again = await verify(env);
    expect(again.code).to.equal(1);
    expect(again.stdout).to.match(/^BROKEN: .*is not recorded in the store/m);
    // An auditor with the public key alone finds it too: the signed checkpoints no longer cover the lines.
    const key = /public key ([0-9a-f]{64})/.exec(clean.stdout)![1]!;
    const auditor = await runCoffer(['audit', 'verify', '--public-key', key, ...files], {});
    expect(auditor.code).to.equal(1);
    expect(auditor.stdout).to.match(/^BROKEN: /m);
  });

  it('finds a tail cut off (the final checkpoint and server.stop deleted, links left as they are)', async () => {
    const { env, dir } = await auditedServer();
    const [file] = auditFiles(join(dir, 'data', 'audit')).slice(-1);
    const lines = readFileSync(file!, 'utf8').split('\n').filter(Boolean);
    writeFileSync(file!, `${lines.slice(0, -2).join('\n')}\n`);
    const run = await verify(env);
    expect(run.code).to.equal(1);
    expect(run.stdout).to.match(
      /^BROKEN: .*(ended at seq \d+, but its files end at seq \d+|the log was truncated)/m,
    );
  });

  it("publishes the checkpoints' public key, with which an auditor verifies the files and nothing else", async () => {
    const settings = serveSettings(1);
    const p = await startProcess(settings.env);
    let key: string;
    try {
      const published = await send(p.url, 'GET', '/v1/sys/audit/public-key', '');
      expect(published.status).to.equal(200);
      expect(published.body).to.include({ algorithm: 'Ed25519' });
      key = published.body.public_key;
      expect(key).to.match(/^[0-9a-f]{64}$/);
      const verified = await send(p.url, 'GET', '/v1/sys/audit/verify', settings.root);
      expect(verified.body).to.include({ intact: true, public_key: key });
      // On the live log, with lines after the newest checkpoint: the auditor's cron passes, saying so.
      for (let i = 0; i < 3; i++) await send(p.url, 'GET', '/v1/kv/live/k', settings.root);
      const live = await runCoffer(
        [
          'audit',
          'verify',
          '--public-key',
          key,
          ...auditFiles(join(settings.dir, 'data', 'audit')),
        ],
        {},
      );
      expect(live.code, live.stdout).to.equal(0);
      expect(live.stdout).to.match(/^intact: /m);
      expect(live.stdout).to.match(
        /note: the newest \d+ entries.* are not yet covered by a checkpoint/,
      );
    } finally {
      await p.stop();
    }
    const env = { ...settings.env, COFFER_LOG_LEVEL: 'silent' };
    const printed = await verify(env);
    expect(printed.stdout).to.include(`public key ${key}`);
    const files = auditFiles(join(settings.dir, 'data', 'audit'));
    const auditor = await runCoffer(['audit', 'verify', '--public-key', key, ...files], {});
    expect(auditor.code, auditor.stdout + auditor.stderr).to.equal(0);
    expect(auditor.stdout).to.match(/intact: /);
    const other = await runCoffer(
      ['audit', 'verify', '--public-key', 'ab'.repeat(32), ...files],
      {},
    );
    expect(other.code).to.equal(1);
    expect(other.stdout).to.match(/signature does not verify/);
  });

  it("reports a killed server's uncovered entries as not intact until a server starts on its host and closes its chain", async () => {
    const settings = serveSettings(1, { COFFER_AUDIT_CHECKPOINT_EVERY: '100000' });
    const env = { ...settings.env, COFFER_LOG_LEVEL: 'silent' };
    let p: CofferProcess = await startProcess(settings.env);
    for (let i = 0; i < 5; i++)
      await send(p.url, 'PUT', `/v1/kv/killed/k${i}`, settings.root, {
        value: 'v',
        type: 'config',
      });
    await killAll(p);
    const cut = await verify(env);
    expect(cut.code).to.equal(1);
    expect(cut.stdout).to.match(
      /^BROKEN: .*entries of chain \S+ .* are not covered by a checkpoint, and its server has not made one since: it stopped without closing its log/m,
    );
    p = await startProcess(settings.env);
    await p.stop();
    const closed = await verify(env);
    expect(closed.code, closed.stdout).to.equal(0);
    const events = auditLines(join(settings.dir, 'data', 'audit')).filter(
      (l) => l.event === 'audit.chain_closed',
    );
    expect(events).to.have.length(1);
    expect(events[0]!.uncovered).to.be.at.least(1);
  });

  it("finds a closed chain cut back with its store record put back to match: the later start's audit.chain_closed says where it ended", async () => {
    const settings = serveSettings(1, { COFFER_AUDIT_CHECKPOINT_EVERY: '4' });
    const env = { ...settings.env, COFFER_LOG_LEVEL: 'silent' };
    const lmdb = join(settings.dir, 'data', 'lmdb');
    let p: CofferProcess = await startProcess(settings.env);
    for (let i = 0; i < 3; i++)
      await send(p.url, 'PUT', `/v1/kv/closed/k${i}`, settings.root, {
        value: 'v',
        type: 'config',
      });
    const auditDir = join(settings.dir, 'data', 'audit');
    const chain = auditLines(auditDir).find((l) => l.action === 'write')!.chain as string;
    // The attacker's older copy of the chain's record, taken now (one checkpoint in).
    const copyRecord = async (): Promise<Buffer> => {
      const storage = new LmdbBackend({ path: lmdb });
      try {
        return Buffer.from((await storage.get(auditChainKey(chain)))!);
      } finally {
        await storage.close();
      }
    };
    const older = await copyRecord();
    const checkpointsThen = auditLines(auditDir).filter(
      (l) => l.chain === chain && l.kind === 'checkpoint',
    ).length;
    for (let i = 0; i < 6; i++) await send(p.url, 'GET', '/v1/kv/closed/k1', settings.root);
    await killAll(p);
    // The next start closes the chain where it ended, and says so in its own chain.
    p = await startProcess(settings.env);
    await p.stop();
    expect((await verify(env)).code).to.equal(0);
    // Cut back to the older checkpoint, the record put back to match it.
    const file = auditFiles(auditDir).find((f) => f.includes(chain))!;
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const cut = lines
      .map((l, i) => [JSON.parse(l).kind, i] as const)
      .filter(([kind]) => kind === 'checkpoint')[checkpointsThen - 1]![1];
    writeFileSync(
      file,
      lines
        .slice(0, cut + 1)
        .map((l) => `${l}\n`)
        .join(''),
    );
    const storage = new LmdbBackend({ path: lmdb });
    await storage.atomic([], () => ({
      writes: [{ op: 'put' as const, key: auditChainKey(chain), value: older }],
      result: undefined,
    }));
    await storage.close();
    const found = await verify(env);
    expect(found.code, found.stdout).to.equal(1);
    expect(found.stdout).to.match(
      new RegExp(
        `BROKEN: .*chain ${chain} was closed at seq ${JSON.parse(lines.at(-1)!).seq} \\(audit\\.chain_closed in chain \\S+\\), but its files end at seq ${JSON.parse(lines[cut]!).seq}: the log was cut`,
      ),
    );
  });

  it('reports a revocation or a rotation in the store that no audit entry names', async () => {
    const c = await startTestCoffer();
    try {
      const token = await c.token({ role: 'reader' });
      const id = token.slice(4, 20);
      // Changed in the store directly, as a process that writes no audit log would.
      await c.app.records.tokens.revoke(id, Date.now());
      await c.app.keyring.rotate(Date.now());
      const coverage = (await c.call('GET', '/v1/sys/audit/verify')).body.coverage;
      expect(coverage.changes.tokens_created).to.include({ count: 1, covered: 1 });
      expect(coverage.changes.tokens_revoked.uncovered).to.deep.equal([id]);
      expect(coverage.changes.keyring_rotations.uncovered).to.deep.equal([2]);
      // Through the API, both are named by their events.
      const other = (await c.call('POST', '/v1/auth/token', { json: { role: 'reader' } })).body.id;
      expect((await c.call('DELETE', `/v1/auth/token/${other}`)).status).to.equal(204);
      expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
      const after = (await c.call('GET', '/v1/sys/audit/verify')).body.coverage.changes;
      expect(after.tokens_revoked).to.deep.include({ count: 2, covered: 1, uncovered: [id] });
      expect(after.keyring_rotations).to.deep.include({ count: 2, covered: 1, uncovered: [2] });
    } finally {
      await c.close();
    }
  });
});
