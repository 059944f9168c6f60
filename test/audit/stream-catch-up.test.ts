import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { auditFiles } from '../support/audit-lines.js';
import { type AuditReceiver, startAuditReceiver } from '../support/audit-receiver.js';
import { eventually } from '../support/eventually.js';
import { send } from '../support/http-client.js';
import { killAll, serveSettings, startProcess } from '../support/process.js';

/** Every line of the audit files in `dir`. */
function localLines(dir: string): string[] {
  return auditFiles(dir).flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean));
}

describe('an audit stream that comes back while the server runs, after a kill -9 during its outage', function () {
  this.timeout(90_000);
  let receiver: AuditReceiver;
  before(async () => {
    receiver = await startAuditReceiver();
  });
  after(async () => {
    await receiver?.close();
  });

  it("gets the killed chains' lines then, not at the next start, and the lag metric counts them until it has them", async () => {
    const { root, env } = serveSettings(1, {
      COFFER_AUDIT_STREAMS: `${receiver.url}?name=siem`,
    });
    const auditDir = join(env.COFFER_DATA_DIR, 'audit');
    let p = await startProcess(env);
    try {
      await send(p.url, 'PUT', '/v1/kv/outage/k', root, { value: 'v1', type: 'secret' });
      receiver.down = true;
      for (let i = 0; i < 10; i++) await send(p.url, 'GET', '/v1/kv/outage/k', root);
      await send(p.url, 'PUT', '/v1/kv/outage/k', root, { value: 'v2', type: 'secret' });
      const before = localLines(auditDir);
      const got = () => new Set(receiver.lines);
      expect(before.filter((l) => !got().has(l)).length, 'lines waiting').to.be.greaterThan(10);
      await killAll(p);
      const killed = localLines(auditDir);
      // Started again while the stream is still down: those lines wait, and the lag says so.
      p = await startProcess(env);
      await eventually(
        async () => {
          const metrics = String((await send(p.url, 'GET', '/v1/sys/metrics', root)).body);
          const lag = Number(
            /coffer_audit_stream_lag_lines\{stream="siem"\} (\d+)/.exec(metrics)?.[1],
          );
          return lag >= killed.filter((l) => !got().has(l)).length;
        },
        { what: "the lag counts the killed chains' lines", timeout: 20_000 },
      );
      // Back while the server runs: every line of the killed chains arrives, with no restart.
      receiver.down = false;
      await eventually(() => killed.every((l) => got().has(l)), {
        what: "the stream has the killed chains' lines",
        timeout: 30_000,
      });
      await eventually(
        async () => {
          const metrics = String((await send(p.url, 'GET', '/v1/sys/metrics', root)).body);
          return /coffer_audit_stream_lag_lines\{stream="siem"\} 0\b/.test(metrics);
        },
        { what: 'the lag back to 0', timeout: 20_000 },
      );
    } finally {
      await killAll(p).catch(() => undefined);
    }
  });
});
