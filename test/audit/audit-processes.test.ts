import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { type AuditLine, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { type Reply, send } from '../support/http-client.js';
import { runCoffer, serveSettings, startProcess } from '../support/process.js';

type Entry = AuditLine;
const readEntries = auditLines;

describe('audit across processes and sinks', function () {
  this.timeout(120_000);

  it('several workers writing at once: no lost, interleaved or duplicated entry; every chain verifies', async () => {
    const { dir, root, env } = serveSettings(2, {
      COFFER_AUDIT_CHECKPOINT_EVERY: '50',
      COFFER_AUDIT_MAX_FILE_BYTES: '65536',
    });
    const p = await startProcess(env);
    const replies: Reply[] = [];
    try {
      for (let round = 0; round < 8; round++) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, (_, i) => {
            const n = round * 50 + i;
            return n % 2 === 0
              ? send(p.url, 'PUT', `/v1/kv/multi/w/k${n}`, root, {
                  value: `secret-${n}`,
                  type: 'secret',
                })
              : send(p.url, 'GET', `/v1/kv/multi/w/k${n - 1}`, root);
          }),
        );
        replies.push(...batch);
      }
    } finally {
      expect(await p.stop()).to.equal(0);
    }
    expect(replies.every((r) => r.status === 201 || r.status === 200 || r.status === 404)).to.equal(
      true,
    );

    const auditDir = join(dir, 'data', 'audit');
    const all = readEntries(auditDir);
    const ids = replies.map((r) => r.headers['x-request-id'] as string);
    expect(new Set(ids).size).to.equal(400);
    const byId = new Map<string, Entry[]>();
    for (const e of all)
      if (e.kind === 'request')
        byId.set(e.request_id as string, [...(byId.get(e.request_id as string) ?? []), e]);
    for (const [i, id] of ids.entries()) {
      expect(byId.get(id), `request ${i}`).to.have.length(1);
      expect((byId.get(id)![0]!.outcome as { status: number }).status).to.equal(replies[i]!.status);
    }
    // One chain per process: the supervisor's (prepare) and each worker's, and both workers served requests.
    const chains = new Set(all.map((e) => e.chain));
    expect(chains.size).to.equal(3);
    const serving = new Set(all.filter((e) => e.kind === 'request').map((e) => e.chain));
    expect(serving.size).to.equal(2);
    expect(all.filter((e) => e.event === 'server.prepare')).to.have.length(1);
    expect(all.filter((e) => e.event === 'server.start')).to.have.length(2);
    expect(all.filter((e) => e.event === 'server.stop')).to.have.length(2);
    // Within each chain, sequence numbers run 1..n without gaps or repeats.
    for (const chain of chains) {
      const seqs = all.filter((e) => e.chain === chain).map((e) => e.seq);
      expect(seqs).to.deep.equal(seqs.map((_, i) => i + 1));
    }

    const verify = await runCoffer(['audit', 'verify'], {
      COFFER_DATA_DIR: env.COFFER_DATA_DIR,
      COFFER_MASTER_KEY_FILE: env.COFFER_MASTER_KEY_FILE,
    });
    expect(verify.code, verify.stdout + verify.stderr).to.equal(0);
    expect(verify.stdout).to.match(
      /^intact: \d+ entries from \S+ to \S+ \(3 chains, \d+ files\)$/m,
    );
    expect(verify.stdout).not.to.include('not yet covered');
    const text = readdirSync(auditDir)
      .map((n) => readFileSync(join(auditDir, n), 'utf8'))
      .join('');
    expect(text).not.to.include('secret-');
    expect(text).not.to.include(root);
  });

  it('copies every line to stdout when audit.stdout is set, after it is durable in the file', async () => {
    const { dir, root, env } = serveSettings(1, {
      COFFER_AUDIT_STDOUT: 'true',
    });
    const p = await startProcess(env);
    let put: Reply;
    try {
      put = await send(p.url, 'PUT', '/v1/kv/out/k', root, {
        value: 'stdout-secret-value',
        type: 'secret',
      });
      expect(put.status).to.equal(201);
      expect((await send(p.url, 'GET', '/v1/kv/out/k', root)).status).to.equal(200);
    } finally {
      await p.stop();
    }
    const printed = p
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{"seq":'))
      .map((l) => JSON.parse(l) as Entry);
    const filed = readEntries(join(dir, 'data', 'audit'));
    // The worker's whole chain is on stdout, line for line as in its file.
    const workerChain = filed.find((e) => e.event === 'server.start')!.chain;
    expect(printed.filter((e) => e.chain === workerChain)).to.deep.equal(
      filed.filter((e) => e.chain === workerChain),
    );
    expect(printed.find((e) => e.request_id === put!.headers['x-request-id'])).to.deep.include({
      action: 'write',
      namespace: 'out',
      key: 'k',
    });
    expect(p.stdout()).not.to.include('stdout-secret-value');
    expect(p.stdout()).not.to.include(root);
  });

  it('a full audit disk: requests are refused with 503 until there is room, then nothing is lost', async () => {
    const mount = join(tempDir(), 'audit');
    mkdirSync(mount);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mount]);
    } catch {
      // Mounting needs root (CI runs as root); say so rather than pass silently.
      throw new Error('this test mounts a 64 KiB tmpfs and needs root (mount -t tmpfs)');
    }
    try {
      const c = await startTestCoffer({
        dataDir: tempDir(),
        env: { COFFER_AUDIT_DIR: mount, COFFER_AUDIT_CHECKPOINT_EVERY: '25' },
      });
      const seen: { id: string; status: number }[] = [];
      let value = 0;
      // Fill the disk: each PUT adds a line; stop at the first refusal.
      for (let i = 0; i < 2000; i++) {
        const res = await c.put(`full/k${i % 20}`, `disk-value-${value++}`);
        seen.push({ id: res.headers.get('x-request-id')!, status: res.status });
        if (res.status === 503) break;
      }
      expect(seen.at(-1)!.status, 'the disk filled up').to.equal(503);
      const last503 = await c.call('GET', '/v1/kv/full/k1');
      expect(last503.status).to.equal(503);
      expect(last503.body.code).to.equal('audit_unavailable');
      expect(last503.headers.get('retry-after')).to.equal('1');
      expect(last503.text).not.to.include('disk-value');
      seen.push({ id: last503.headers.get('x-request-id')!, status: 503 });
      // While refusing, a write is not applied: the handler never runs.
      const refusedPut = await c.put('full/never', 'never-written');
      expect(refusedPut.status).to.equal(503);
      seen.push({ id: refusedPut.headers.get('x-request-id')!, status: 503 });

      execFileSync('mount', ['-o', 'remount,size=4m', mount]);
      let after = await c.call('GET', '/v1/kv/full/k1');
      await eventually(
        async () => {
          after = await c.call('GET', '/v1/kv/full/k1');
          return after.status !== 503;
        },
        { interval: 100, what: 'the audit log writable again' },
      );
      expect(after.status).to.equal(200);
      expect((await c.call('GET', '/v1/kv/full/never')).status).to.equal(404);
      const env = {
        COFFER_DATA_DIR: c.config.data_dir,
        COFFER_MASTER_KEY_FILE: c.config.master_key_file,
        COFFER_AUDIT_DIR: mount,
      };
      await c.close();

      const all = readEntries(mount);
      const note = all.find((e) => e.event === 'audit.refused') as Entry & {
        refused_seqs: number[];
      };
      expect(note).to.deep.include({ reason: 'ENOSPC' });
      for (const { id, status } of seen) {
        const mine = all.filter((e) => e.request_id === id && e.kind === 'request');
        expect(mine, id).to.have.length(1);
        // An entry that was in the batch that failed records what the handler meant to send; the note
        // after it lists it as refused, which is what the client got.
        const refusedLater =
          note.refused_seqs.includes(mine[0]!.seq) && mine[0]!.chain === note.chain;
        expect(refusedLater ? 503 : (mine[0]!.outcome as { status: number }).status, id).to.equal(
          status,
        );
      }
      const verify = await runCoffer(['audit', 'verify'], env);
      expect(verify.code, verify.stdout).to.equal(0);
      expect(verify.stdout).to.match(/^intact: /);
    } finally {
      execFileSync('umount', [mount]);
    }
  });
});
