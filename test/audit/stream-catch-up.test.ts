import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { auditFiles } from '../support/audit-lines.js';
import { startAuditReceiver } from '../support/audit-receiver.js';
import { eventually } from '../support/eventually.js';
import { send } from '../support/http-client.js';
import { killAll, serveSettings, startProcess } from '../support/process.js';
import { startSyslogReceiver } from '../support/rsyslog.js';
import { requirePackage } from '../support/system-packages.js';

/** Every line of the audit files in `dir`. */
function localLines(dir: string): string[] {
  return auditFiles(dir).flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean));
}

/** A stream's receiver as this test drives it: its setting, the lines it has, an outage. */
interface Receiver {
  readonly stream: string;
  lines(): string[];
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

const RECEIVERS: Record<string, (context: Mocha.Context) => Promise<Receiver>> = {
  'an HTTP collector': async () => {
    const r = await startAuditReceiver();
    return {
      stream: `${r.url}?name=siem`,
      lines: () => r.lines,
      down: async () => {
        r.down = true;
      },
      up: async () => {
        r.down = false;
      },
      close: () => r.close(),
    };
  },
  'a real rsyslog': async (context) => {
    requirePackage(context, 'rsyslog');
    const r = await startSyslogReceiver(false);
    return {
      stream: `syslog+tcp://127.0.0.1:${r.port}?name=siem`,
      lines: () => r.lines().map((l) => l.slice(l.indexOf('{'))),
      down: () => r.stop(),
      up: () => r.start(),
      close: () => r.stop(),
    };
  },
};

for (const [kind, start] of Object.entries(RECEIVERS))
  describe(`an audit stream (${kind}) that comes back while the server runs, after a kill -9 during its outage`, function () {
    this.timeout(90_000);
    let receiver: Receiver | undefined;
    before(async function () {
      receiver = await start(this);
    });
    after(async () => {
      await receiver?.close();
    });

    it("gets the killed chains' lines then, not at the next start, and the lag metric counts them until it has them", async () => {
      const r = receiver!;
      const { root, env } = serveSettings(1, { COFFER_AUDIT_STREAMS: r.stream });
      const auditDir = join(env.COFFER_DATA_DIR, 'audit');
      const got = () => new Set(r.lines());
      const lag = async (): Promise<number> => {
        const metrics = String((await send(p.url, 'GET', '/v1/sys/metrics', root)).body);
        return Number(/coffer_audit_stream_lag_lines\{stream="siem"\} (\d+)/.exec(metrics)?.[1]);
      };
      let p = await startProcess(env);
      try {
        await send(p.url, 'PUT', '/v1/kv/outage/k', root, { value: 'v1', type: 'secret' });
        await eventually(() => localLines(auditDir).every((l) => got().has(l)), {
          what: 'the stream has the first lines',
        });
        await r.down();
        for (let i = 0; i < 10; i++) await send(p.url, 'GET', '/v1/kv/outage/k', root);
        await send(p.url, 'PUT', '/v1/kv/outage/k', root, { value: 'v2', type: 'secret' });
        await killAll(p);
        const killed = localLines(auditDir);
        expect(killed.filter((l) => !got().has(l)).length, 'lines waiting').to.be.greaterThan(10);
        // Started again while the stream is still down: those lines wait, and the lag says so.
        p = await startProcess(env);
        await eventually(async () => (await lag()) >= killed.filter((l) => !got().has(l)).length, {
          what: "the lag counts the killed chains' lines",
          timeout: 20_000,
        });
        // Back while the server runs: every line of the killed chains arrives, with no restart.
        await r.up();
        await eventually(() => killed.every((l) => got().has(l)), {
          what: "the stream has the killed chains' lines",
          timeout: 30_000,
        });
        await eventually(async () => (await lag()) === 0, {
          what: 'the lag back to 0',
          timeout: 20_000,
        });
      } finally {
        await killAll(p).catch(() => undefined);
      }
    });
  });
