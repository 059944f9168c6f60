import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { chainKeysOf, publicChainKeys } from '../../src/audit/chain-keys.js';
import { type VerifyResult, verifyAudit } from '../../src/audit/verify.js';
import { auditLines, auditFiles as filesIn } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { runCoffer as run } from '../support/process.js';

const auditFiles = (c: TestCoffer): string[] => filesIn(c.config.audit.dir!);
const entries = (c: TestCoffer): Record<string, unknown>[] => auditLines(c.config.audit.dir!);

describe('audit log', function () {
  this.timeout(60_000);

  it('records every request before its response is sent: who, what, outcome; never a value or a token', async () => {
    const c = await startTestCoffer();
    try {
      const marker = `value-${Date.now()}-must-not-appear`;
      const put = await c.put('audited/app/db', marker);
      expect(put.status).to.equal(201);
      const requestId = put.headers.get('x-request-id');
      expect(requestId).to.match(/^[0-9A-Za-z]{16}$/);
      // The entry is on disk by the time the client has the response.
      const written = entries(c).find((e) => e.request_id === requestId && e.kind === 'request');
      expect(written).to.deep.include({
        kind: 'request',
        method: 'PUT',
        route: '/v1/kv/{path}',
        action: 'write',
        namespace: 'audited/app',
        key: 'db',
        version: 1,
        token_id: 'root',
        role: 'root',
      });
      expect(written!.outcome).to.deep.equal({ status: 201, code: null });

      const reader = await c.token({ role: 'reader' });
      const readerId = reader.split('_')[1];
      expect((await c.call('GET', '/v1/kv/audited/app/db', { token: reader })).status).to.equal(
        200,
      );
      expect(
        (
          await c.call('PUT', '/v1/kv/audited/app/db', {
            token: reader,
            json: { value: marker, type: 'secret' },
          })
        ).status,
      ).to.equal(403);
      expect(
        (
          await c.call('GET', '/v1/kv/audited/app/db', {
            token: `cfr_nosuchtokenid00_${'x'.repeat(43)}`,
          })
        ).status,
      ).to.equal(401);
      expect((await c.call('DELETE', `/v1/auth/token/${reader}`)).status).to.equal(204);

      const all = entries(c);
      const requests = all.filter((e) => e.kind === 'request');
      expect(requests.find((e) => e.action === 'read' && e.token_id === readerId)).to.deep.include({
        role: 'reader',
        namespace: 'audited/app',
        key: 'db',
        version: 1,
      });
      expect(
        requests.find((e) => e.method === 'PUT' && e.token_id === readerId)!.outcome,
      ).to.deep.equal({ status: 403, code: 'forbidden' });
      expect(
        requests.find((e) => (e.outcome as { status: number }).status === 401),
      ).to.deep.include({ token_id: null, role: null });
      expect(requests.find((e) => e.action === 'token.revoke')).to.deep.include({
        subject_token_id: readerId,
      });
      expect(all[0]).to.deep.include({ kind: 'event', event: 'server.start' });

      const text = auditFiles(c)
        .map((f) => readFileSync(f, 'utf8'))
        .join('');
      expect(text).not.to.include(marker);
      expect(text).not.to.include(reader);
      expect(text).not.to.include(c.rootToken);
      expect(text).not.to.include(reader.split('_')[2]!);
    } finally {
      await c.close();
    }
  });

  it('fails closed: an unwritable audit file makes requests 503 audit_unavailable, and no entry is lost once it is writable again', async () => {
    const c = await startTestCoffer({ dataDir: tempDir() });
    const [file] = auditFiles(c);
    try {
      expect((await c.put('closed/k', 'before')).status).to.equal(201);
      // As root, permissions do not stop writes; an immutable file does (ext4 attribute, as for a read-only disk).
      execFileSync('chattr', ['+i', file!]);
      const refused = await c.call('GET', '/v1/kv/closed/k');
      expect(refused.status).to.equal(503);
      expect(refused.body).to.include({ code: 'audit_unavailable', status: 503 });
      expect(refused.text).not.to.include('before');
      expect((await c.call('GET', '/v1/kv/closed/k')).status).to.equal(503);
      expect((await c.call('GET', '/v1/auth/me')).status).to.equal(503);
      const health = await c.call('GET', '/v1/sys/health', { token: null });
      expect(health.status).to.equal(503);
      expect(health.body.code).to.equal('audit_unavailable');
      execFileSync('chattr', ['-i', file!]);
      let after = await c.call('GET', '/v1/kv/closed/k');
      await eventually(
        async () => {
          after = await c.call('GET', '/v1/kv/closed/k');
          return after.status !== 503;
        },
        { timeout: 5000, interval: 100, what: 'the audit log open again' },
      );
      expect(after.status).to.equal(200);
      expect(after.body.value).to.equal('before');
    } finally {
      try {
        execFileSync('chattr', ['-i', file!]);
      } catch {
        // already writable
      }
    }
    const keys = chainKeysOf(c.app.keyring.current());
    const registry = await c.app.records.audit.chains();
    await c.close();
    expect(verifyAudit(auditFiles(c), { keys, registry, now: Date.now() })).to.deep.include({
      intact: true,
    });
    const all = entries(c);
    const reads = all.filter(
      (e) => e.kind === 'request' && e.route === '/v1/kv/{path}' && e.method === 'GET',
    );
    // Every refused request is in the log, in order, with what the client got.
    expect(reads.length).to.be.at.least(3);
    const note = all.find((e) => e.event === 'audit.refused') as
      | { refused_seqs: number[]; reason: string }
      | undefined;
    expect(note, 'a note of the requests refused when the write failed').to.not.equal(undefined);
    expect(note!.reason).to.equal('EPERM');
    const firstRefused = all.find((e) => e.seq === note!.refused_seqs[0]);
    expect(firstRefused).to.deep.include({ route: '/v1/kv/{path}', method: 'GET' });
    const duringOutage = all.filter(
      (e) => (e.outcome as { code?: string } | undefined)?.code === 'audit_unavailable',
    );
    expect(duringOutage.length).to.be.at.least(2);
    expect(all.map((e) => e.seq)).to.deep.equal(all.map((_, i) => i + 1));
  });

  describe('verification', () => {
    let c: TestCoffer;
    let files: string[];
    let verify: (paths?: string[]) => Promise<VerifyResult>;

    before(async () => {
      c = await startTestCoffer({ env: { COFFER_AUDIT_CHECKPOINT_EVERY: '7' } });
      for (let i = 0; i < 40; i++) await c.put(`verify/k${i % 5}`, `v${i}`);
      const keys = chainKeysOf(c.app.keyring.current());
      verify = async (paths = files) =>
        verifyAudit(paths, { keys, registry: await c.app.records.audit.chains(), now: Date.now() });
      files = auditFiles(c);
    });
    after(async () => {
      await c.close();
    });

    /** A copy of the log's file with `change` made to its lines. */
    function copyOf(change: (lines: string[]) => string[]): string {
      const lines = readFileSync(files[0]!, 'utf8').split('\n').filter(Boolean);
      const copy = join(c.dataDir, 'tampered');
      mkdirSync(copy, { recursive: true });
      const path = join(copy, files[0]!.split('/').at(-1)!);
      writeFileSync(
        path,
        change(lines.slice())
          .map((l) => `${l}\n`)
          .join(''),
      );
      return path;
    }

    /** Runs `change` on a copy of the log's lines and verifies the copy. */
    async function tampered(change: (lines: string[]) => string[]): Promise<VerifyResult> {
      return verify([copyOf(change)]);
    }

    it('passes an untouched log', async () => {
      const result = await verify();
      expect(result).to.deep.include({ intact: true, chains: 1 });
      expect((result as { entries: number }).entries).to.be.at.least(41);
    });

    it('catches an edited field, a deleted line, two swapped lines, an inserted line and a truncated tail', async () => {
      const edited = await tampered((l) => {
        l[10] = l[10]!.replace('"ts":"2', '"ts":"1');
        return l;
      });
      expect(edited).to.deep.include({ intact: false, line: 12 });
      expect((edited as { reason: string }).reason).to.match(/does not follow the entry before it/);

      const deleted = await tampered((l) => l.filter((_, i) => i !== 5));
      expect(deleted).to.deep.include({ intact: false, line: 6 });
      expect((deleted as { reason: string }).reason).to.match(/expected seq 6/);

      const swapped = await tampered((l) => {
        [l[3], l[4]] = [l[4]!, l[3]!];
        return l;
      });
      expect(swapped).to.deep.include({ intact: false, line: 4 });

      const inserted = await tampered((l) => [
        ...l.slice(0, 8),
        l[8]!.replace('"seq":9', '"seq":9'),
        ...l.slice(8),
      ]);
      expect(inserted).to.deep.include({ intact: false, line: 10 });

      // Rewriting everything after an edit, recomputing every prev as a plain hash: without the link key
      // the first recomputed prev is wrong, and with the public key alone the next checkpoint's
      // signature no longer covers what is there.
      const rewrite = (l: string[]): string[] => {
        const out: string[] = [];
        let prev = '';
        for (const [i, line] of l.entries()) {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (i > 0) entry.prev = prev;
          if (i === 3) entry.action = 'forged';
          const text = JSON.stringify(entry);
          prev = createHash('sha256').update(text).digest('hex');
          out.push(text);
        }
        return out;
      };
      const rewritten = await tampered(rewrite);
      expect(rewritten).to.deep.include({ intact: false, line: 2 });
      expect((rewritten as { reason: string }).reason).to.match(
        /does not follow the entry before it/,
      );
      const publicOnly = verifyAudit([copyOf(rewrite)], {
        keys: publicChainKeys(chainKeysOf(c.app.keyring.current()).publicKey),
        registry: null,
        now: Date.now(),
      });
      expect(publicOnly).to.deep.include({ intact: false });
      expect((publicOnly as { reason: string }).reason).to.match(
        /the checkpoint's signature does not verify over the entries before it/,
      );

      // Cutting the tail back before the newest checkpoint the store recorded.
      const truncated = await tampered((l) => l.slice(0, l.length - 9));
      expect(truncated).to.deep.include({ intact: false });
      expect((truncated as { reason: string }).reason).to.match(
        /the store records a checkpoint at seq \d+, but the files end at seq \d+: the log was truncated/,
      );
    });

    it('coffer audit verify prints "intact: N entries from T1 to T2" and exits 0, or the first broken entry and exits 1', async () => {
      const env = {
        COFFER_DATA_DIR: c.config.data_dir,
        COFFER_MASTER_KEY_FILE: c.config.master_key_file,
      };
      const ok = await run(['audit', 'verify', ...files], env);
      expect(ok.code, ok.stdout + ok.stderr).to.equal(0);
      expect(ok.stdout).to.match(
        /^intact: \d+ entries from \d{4}-\S+ to \d{4}-\S+ \(1 chains, 1 files\)/,
      );
      const lines = readFileSync(files[0]!, 'utf8').split('\n').filter(Boolean);
      const copy = join(c.dataDir, 'cli-tampered');
      mkdirSync(copy, { recursive: true });
      const path = join(copy, files[0]!.split('/').at(-1)!);
      writeFileSync(
        path,
        lines
          .filter((_, i) => i !== 2)
          .map((l) => `${l}\n`)
          .join(''),
      );
      const bad = await run(['audit', 'verify', path], env);
      expect(bad.code).to.equal(1);
      expect(bad.stdout).to.match(/^BROKEN: .*:3 \(seq 4\): expected seq 3/);
    });
  });
});
