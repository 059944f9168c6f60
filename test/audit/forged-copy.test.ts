import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { auditFiles, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { killAll, runCoffer, serveSettings, startProcess } from '../support/process.js';
import { type SyslogReceiver, startSyslogReceiver } from '../support/rsyslog.js';
import { requirePackage } from '../support/system-packages.js';

/** The lines of one audit file. */
function fileLines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

/** Sends rsyslog one RFC 5424 message, octet-counted over TCP, as anyone who reaches its port can. */
async function sendSyslog(port: number, msg: string): Promise<void> {
  const frame = `<110>1 2026-12-08T00:00:00.000Z attacker coffer - - - ${msg}`;
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end(`${Buffer.byteLength(frame)} ${frame}`, () => resolve());
    });
    socket.once('error', reject);
  });
}

/**
 * The shipped copy is anyone's to add to: `coffer audit verify --against` must rest on what the server
 * signed (and, with the master key, linked), so that a forged line is reported beside the verdict on the
 * local log, never instead of it, and is never blamed on the server.
 */
describe('verify --against a shipped copy someone else wrote into (a real rsyslog)', function () {
  this.timeout(120_000);
  let syslog: SyslogReceiver;
  let env: ReturnType<typeof serveSettings>['env'];
  let key: string;
  /** The reads' chain, cut locally; its first missing seq; and a chain left intact. */
  let cutChain: string;
  let firstMissing: number;
  let intactChain: string;

  before(async function () {
    requirePackage(this, 'rsyslog');
    syslog = await startSyslogReceiver(false);
    const settings = serveSettings(1, {
      COFFER_AUDIT_STREAMS: `syslog+tcp://127.0.0.1:${syslog.port}`,
      COFFER_AUDIT_CHECKPOINT_EVERY: '6',
    });
    env = settings.env;
    const p = await startProcess(env);
    for (let i = 0; i < 8; i++)
      await send(p.url, 'PUT', `/v1/kv/forge/k${i}`, settings.root, {
        value: `v${i}`,
        type: 'secret',
      });
    for (let i = 0; i < 5; i++) await send(p.url, 'GET', '/v1/kv/forge/k1', settings.root);
    const auditDir = join(env.COFFER_DATA_DIR, 'audit');
    const everything = () => auditFiles(auditDir).flatMap(fileLines);
    await eventually(
      () => {
        const got = new Set(syslog.lines());
        return everything().every((line) => got.has(line));
      },
      { what: 'rsyslog has every line' },
    );
    await killAll(p);
    // The reads' chain cut back to its last checkpoint the store records, before the next start.
    const reads = auditLines(auditDir).filter((e) => e.action === 'read');
    cutChain = reads[0]!.chain as string;
    const file = auditFiles(auditDir).find((f) => f.includes(cutChain))!;
    const lines = fileLines(file);
    // (With a stream the chain also has checkpoints of its own, seals, which the store does not record.)
    const last = lines
      .map((l) => JSON.parse(l))
      .map((e) => e.kind === 'checkpoint' && e.batch !== true)
      .lastIndexOf(true);
    expect(last).to.be.lessThan(lines.length - 1);
    expect(last).to.be.greaterThan(0);
    firstMissing = JSON.parse(lines[last + 1]!).seq;
    truncateSync(
      file,
      Buffer.byteLength(
        lines
          .slice(0, last + 1)
          .map((l) => `${l}\n`)
          .join(''),
      ),
    );
    await (await startProcess(env)).stop();
    await eventually(
      () => {
        const got = new Set(syslog.lines());
        return everything().every((line) => got.has(line));
      },
      { what: 'rsyslog has the restart too' },
    );
    // Another chain, left whole: the one with the most lines besides the cut one.
    const counts = new Map<string, number>();
    for (const e of auditLines(auditDir))
      if (e.chain !== cutChain)
        counts.set(e.chain as string, (counts.get(e.chain as string) ?? 0) + 1);
    intactChain = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
    expect(counts.get(intactChain)).to.be.greaterThan(2);
    const local = await runCoffer(['audit', 'verify'], env);
    expect(local.stdout, local.stdout).to.match(/^intact: /m);
    key = /public key ([0-9a-f]{64})/.exec(local.stdout)![1]!;

    // One forged message: an earlier line of the cut chain with one field changed.
    const earlier = lines.find((l) => JSON.parse(l).action === 'write')!;
    const forged = earlier.replace('"key":"k', '"key":"x');
    expect(forged).to.not.equal(earlier);
    await sendSyslog(syslog.port, forged);
    await eventually(() => syslog.lines().includes(forged), {
      what: 'rsyslog has the forged line',
    });
  });

  after(async () => {
    await syslog?.stop();
  });

  const verify = (args: string[], file: string) =>
    runCoffer(['audit', 'verify', ...args, '--against', file], env);

  it('one forged line hides no cut: the cut is named at its first missing seq, the forged line beside it as the copy’s', async () => {
    for (const args of [[], ['--public-key', key]]) {
      const held = await verify(args, syslog.file);
      expect(held.code, held.stdout).to.equal(1);
      expect(held.stdout, args.join(' ')).to.include(
        `NOT AS SHIPPED: chain ${cutChain} seq ${firstMissing}: missing from the local log`,
      );
      expect(held.stdout).to.match(
        new RegExp(
          `SHIPPED COPY NOT AS SIGNED: chain ${cutChain} seq \\d+: the shipped copy holds a line for this entry besides the one the server signed`,
        ),
      );
      // The first line says the verdict is not intact, though the local checks pass.
      expect(held.stdout.split('\n')[0]).to.match(/^NOT INTACT/);
    }
  });

  it('lines forged after a chain’s last shipped line, or of a chain that never was, are the copy’s fault, never the server’s', async () => {
    const shipped = syslog.lines();
    const ofIntact = shipped.filter((l) => JSON.parse(l).chain === intactChain);
    const end = Math.max(...ofIntact.map((l) => JSON.parse(l).seq as number));
    const after = JSON.stringify({
      seq: end + 1,
      chain: intactChain,
      ts: new Date().toISOString(),
      prev: 'ab'.repeat(32),
      kind: 'request',
      action: 'read',
    });
    const invented = JSON.stringify({
      seq: 1,
      chain: 'mz0000000-4242-Invented',
      ts: new Date().toISOString(),
      prev: '0'.repeat(64),
      kind: 'request',
      action: 'write',
    });
    const file = join(tempDir(), 'with-forged.log');
    writeFileSync(file, `${[...shipped, after, invented].join('\n')}\n`);
    const master = await verify([], file);
    expect(master.stdout).to.include(
      `SHIPPED COPY NOT AS SIGNED: chain ${intactChain} seq ${end + 1}`,
    );
    expect(master.stdout).to.include(
      'SHIPPED COPY NOT AS SIGNED: chain mz0000000-4242-Invented seq 1',
    );
    // With the public key alone nothing proves who wrote them: said so, and still not the server's fault.
    const pub = await verify(['--public-key', key], file);
    expect(pub.stdout).to.include(`UNSIGNED IN SHIPPED COPY: chain ${intactChain} seq ${end + 1}`);
    expect(pub.stdout).to.include('UNSIGNED IN SHIPPED COPY: chain mz0000000-4242-Invented seq 1');
    for (const out of [master.stdout, pub.stdout]) {
      expect(out).to.not.include(`NOT AS SHIPPED: chain ${intactChain}`);
      expect(out).to.not.include('NOT AS SHIPPED: chain mz0000000-4242-Invented');
    }
  });

  it('an empty copy, or one without an audit entry, holds nothing: exit 1, never "all 0 entries"', async () => {
    const empty = join(tempDir(), 'empty.log');
    writeFileSync(empty, '');
    const noEntry = join(tempDir(), 'no-entry.log');
    writeFileSync(noEntry, 'Dec  8 00:00:00 host sshd[1]: hello\n{"not":"an entry"}\n');
    for (const file of [empty, noEntry]) {
      const held = await verify([], file);
      expect(held.code, held.stdout).to.equal(1);
      expect(held.stdout).to.include('NOTHING SHIPPED');
      expect(held.stdout).to.not.include('all 0 entries');
      expect(held.stdout.split('\n')[0]).to.match(/^NOT INTACT/);
    }
  });

  it('a chain whose first lines are missing locally is named from seq 1, not taken as archived', async () => {
    const auditDir = join(env.COFFER_DATA_DIR, 'audit');
    const file = auditFiles(auditDir).find((f) => f.includes(intactChain))!;
    const lines = fileLines(file);
    writeFileSync(file, `${lines.slice(2).join('\n')}\n`);
    try {
      const held = await verify([], syslog.file);
      expect(held.code).to.equal(1);
      expect(held.stdout).to.include(`NOT AS SHIPPED: chain ${intactChain} seq 1: missing`);
      expect(held.stdout).to.not.match(/as shipped: all/);
    } finally {
      writeFileSync(file, `${lines.join('\n')}\n`);
    }
  });
});
