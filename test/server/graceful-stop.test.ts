import { Agent, request } from 'node:http';
import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { runCoffer, serveSettings, startProcess } from '../support/process.js';

/** One PUT on a keep-alive connection of `agent`: its status, or the connection error's code. */
function put(
  agent: Agent,
  url: string,
  token: string,
  path: string,
  value: string,
): Promise<{ status: number; requestId?: string } | { error: string }> {
  const body = JSON.stringify({ value, type: 'secret' });
  return new Promise((resolve) => {
    const req = request(
      `${url}${path}`,
      {
        method: 'PUT',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, requestId: String(res.headers['x-request-id']) }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end(body);
  });
}

describe('a graceful stop under write load', function () {
  this.timeout(120_000);

  it('drains: every request in flight is answered and audited, no audit.unavailable, no 503, every stored version named by its own write', async () => {
    for (let round = 0; round < 3; round++) {
      const { root, env } = serveSettings(2);
      const p = await startProcess(env);
      const agent = new Agent({ keepAlive: true, maxSockets: 48 });
      const answers: { status: number; requestId?: string }[] = [];
      let stopped = false;
      const loop = async (n: number): Promise<void> => {
        for (let i = 0; !stopped || i < 1; i++) {
          const res = await put(agent, p.url, root, `/v1/kv/drain/k${n}`, `value-${n}-${i}`);
          if ('error' in res) return;
          answers.push(res);
        }
      };
      const loops = Array.from({ length: 48 }, (_, n) => loop(n));
      await new Promise((r) => setTimeout(r, 700));
      const stopping = Date.now();
      const exit = p.stop();
      stopped = true;
      expect(await exit).to.equal(0);
      // Keep-alive clients under load let go at their next answer (Connection: close): the stop does not
      // wait out the 10 s after which connections are closed under their requests.
      expect(Date.now() - stopping, 'the stop took').to.be.lessThan(6000);
      await Promise.all(loops);
      agent.destroy();

      expect(answers.length, 'writes answered before the stop').to.be.greaterThan(50);
      expect(
        answers.filter((a) => a.status !== 200 && a.status !== 201).map((a) => a.status),
      ).to.deep.equal([]);
      const printed = p.stdout() + p.stderr();
      expect(printed).not.to.include('audit.unavailable');
      const entries = auditLines(`${env.COFFER_DATA_DIR}/audit`);
      const audited = new Map(
        entries.filter((e) => e.kind === 'request').map((e) => [e.request_id, e]),
      );
      for (const a of answers)
        expect(
          (audited.get(a.requestId) as { outcome?: { status?: number } } | undefined)?.outcome
            ?.status,
          a.requestId,
        ).to.equal(a.status);
      const verify = await runCoffer(['audit', 'verify'], env);
      expect(verify.code, verify.stdout).to.equal(0);
      // Every version is named by its write's own entry: none only by the intent of a write cut off.
      expect(verify.stdout).to.match(
        /covers: \d+ stored versions: \d+ named by their write's entry, 0 by/,
      );
    }
  });
});
