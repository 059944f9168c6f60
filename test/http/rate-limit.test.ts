import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

const wrongSecret = (token: string, i: number): string =>
  `${token.slice(0, 21)}${String(i).padStart(43, 'w')}`;

describe("the spec's 401 stays a 401: limits on wrong secrets", function () {
  this.timeout(120_000);

  describe('with the default budget', () => {
    let c: TestCoffer;
    before(async () => {
      // An empty value leaves the setting at its default (the harness raises it for other tests).
      c = await startTestCoffer({
        env: { COFFER_AUTH_FAILURE_BURST: '', COFFER_AUTH_FAILURE_RATE: '' },
      });
    });
    after(async () => {
      await c.close();
    });

    it('answers 401 to any number of failures that cost no argon2: no token, malformed, unknown id, expired, revoked', async () => {
      const revoked = await c.token({ role: 'reader' });
      expect((await c.call('DELETE', `/v1/auth/token/${revoked.slice(4, 20)}`)).status).to.equal(
        204,
      );
      const expired = await c.token({ role: 'reader', expires_in: 1 });
      await eventually(
        async () => (await c.call('GET', '/v1/auth/me', { token: expired })).status === 401,
        { timeout: 3000, interval: 100, what: 'the token expired' },
      );
      const statuses = new Set<number>();
      for (let i = 0; i < 40; i++) {
        for (const token of [
          null,
          'garbage',
          `cfr_${'Z'.repeat(16)}_${String(i).padStart(43, 'u')}`,
          revoked,
          expired,
          wrongSecret(revoked, i),
        ]) {
          statuses.add((await c.call('GET', '/v1/auth/me', { token })).status);
        }
        statuses.add(
          (
            await c.call('GET', '/v1/auth/me', {
              headers: { authorization: 'Basic Zm9vOmJhcg==' },
              token: null,
            })
          ).status,
        );
      }
      expect([...statuses]).to.deep.equal([401]);
    });

    it('answers 401 to 100 wrong secrets of a known token from one client within a minute, and still verifies a new token from that client', async () => {
      const target = await c.token({ role: 'reader' });
      const fresh = await c.token({ role: 'writer' });
      const statuses: number[] = [];
      for (let batch = 0; batch < 10; batch++) {
        const replies = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            c.call('GET', '/v1/auth/me', { token: wrongSecret(target, batch * 10 + i) }),
          ),
        );
        statuses.push(...replies.map((r) => r.status));
      }
      expect(statuses.filter((s) => s !== 401)).to.deep.equal([]);
      expect(statuses).to.have.length(100);
      // A token never verified before, from the same address, during the failures.
      expect((await c.call('GET', '/v1/auth/me', { token: fresh })).status).to.equal(200);
      expect((await c.call('GET', '/v1/auth/me', { token: target })).status).to.equal(200);
    });

    it('refuses two Authorization headers with 400 instead of letting the first win', async () => {
      const res = await c.call('GET', '/v1/auth/me', {
        token: null,
        headers: { authorization: [`Bearer ${c.rootToken}`, 'Bearer garbage'] },
      });
      expect(res.status).to.equal(400);
      expect(res.body.detail).to.equal('send one Authorization header, not several');
      const reversed = await c.call('GET', '/v1/auth/me', {
        token: null,
        headers: { authorization: ['Bearer garbage', `Bearer ${c.rootToken}`] },
      });
      expect(reversed.status).to.equal(400);
    });
  });

  describe('past the budget', () => {
    let c: TestCoffer;
    before(async () => {
      c = await startTestCoffer({
        env: { COFFER_AUTH_FAILURE_BURST: '3', COFFER_AUTH_FAILURE_RATE: '0.5' },
      });
    });
    after(async () => {
      await c.close();
    });

    it('answers 429 with Retry-After, held back about a second, for that token only; other tokens and failures stay as they were', async () => {
      const good = await c.token({ role: 'reader' });
      const target = await c.token({ role: 'reader' }); // never used: its wrong secrets need argon2
      const other = await c.token({ role: 'reader' });
      expect((await c.call('GET', '/v1/auth/me', { token: good })).status).to.equal(200);
      const statuses = [];
      for (let i = 0; i < 4; i++)
        statuses.push(
          (await c.call('GET', '/v1/auth/me', { token: wrongSecret(target, i) })).status,
        );
      expect(statuses).to.deep.equal([401, 401, 401, 429]);
      expect((await c.call('GET', '/v1/auth/me', { token: null })).status).to.equal(401);
      expect(
        (await c.call('GET', '/v1/auth/me', { token: wrongSecret(other, 1) })).status,
      ).to.equal(401);
      expect((await c.call('GET', '/v1/auth/me', { token: other })).status).to.equal(200);

      const started = performance.now();
      const [limited, served] = await Promise.all([
        c.call('GET', '/v1/kv/a/b', { token: wrongSecret(target, 99) }),
        (async () => {
          const t = performance.now();
          const res = await c.call('GET', '/v1/auth/me', { token: good });
          return { status: res.status, ms: performance.now() - t };
        })(),
      ]);
      expect(limited.status).to.equal(429);
      expect(limited.body.code).to.equal('too_many_requests');
      expect(Number(limited.headers.get('retry-after'))).to.be.at.least(1);
      expect(performance.now() - started).to.be.at.least(900);
      expect(served.status).to.equal(200);
      // Not held back: a tarpitted answer takes at least a second.
      expect(served.ms).to.be.below(900);
    });

    it('answers 401 to any number of wrong secrets of a token it has verified: they are known wrong without argon2', async () => {
      const inUse = await c.token({ role: 'reader' });
      expect((await c.call('GET', '/v1/auth/me', { token: inUse })).status).to.equal(200);
      const statuses = new Set<number>();
      for (let i = 0; i < 12; i++)
        statuses.add(
          (await c.call('GET', '/v1/auth/me', { token: wrongSecret(inUse, 1000 + i) })).status,
        );
      expect([...statuses]).to.deep.equal([401]);
      expect((await c.call('GET', '/v1/auth/me', { token: inUse })).status).to.equal(200);
    });
  });

  describe('behind a trusted reverse proxy (COFFER_TRUSTED_PROXIES)', () => {
    it('takes the client address from X-Forwarded-For only from a trusted peer, right to left', async () => {
      const budget = { COFFER_AUTH_FAILURE_BURST: '2', COFFER_AUTH_FAILURE_RATE: '0.01' };
      const proxied = await startTestCoffer({
        env: { ...budget, COFFER_TRUSTED_PROXIES: '127.0.0.0/8, ::1' },
      });
      const direct = await startTestCoffer({ env: budget });
      try {
        for (const c of [proxied, direct]) {
          const token = await c.token({ role: 'reader' });
          const from = (address: string, i: number) =>
            c.call('GET', '/v1/auth/me', {
              token: wrongSecret(token, i),
              headers: { 'x-forwarded-for': address },
            });
          const first = [
            (await from('203.0.113.5', 1)).status,
            (await from('203.0.113.5', 2)).status,
            (await from('203.0.113.5', 3)).status,
          ];
          expect(first).to.deep.equal([401, 401, 429]);
          // Another client behind the proxy has its own budget; without a trusted proxy it is the same address.
          expect((await from('198.51.100.7', 4)).status).to.equal(c === proxied ? 401 : 429);
          // A client cannot pick its address by sending the header: only the hop the proxy appended counts.
          expect((await from('198.51.100.99, 203.0.113.5', 5)).status).to.equal(429);
        }
        const clients = new Set(
          auditLines(proxied.config.audit.dir!)
            .filter((l) => l.kind === 'request')
            .map((l) => l.client),
        );
        expect(clients).to.include('203.0.113.5').and.include('198.51.100.7');
        expect(
          new Set(
            auditLines(direct.config.audit.dir!)
              .filter((l) => l.kind === 'request')
              .map((l) => l.client),
          ),
        ).to.not.include('203.0.113.5');
      } finally {
        await proxied.close();
        await direct.close();
      }
    });

    it('refuses a malformed COFFER_TRUSTED_PROXIES at start-up, naming it', async () => {
      let error: unknown;
      await startTestCoffer({ env: { COFFER_TRUSTED_PROXIES: '10.0.0.0/33' } }).catch(
        (e: unknown) => (error = e),
      );
      expect(String(error)).to.equal(
        'ConfigError: COFFER_TRUSTED_PROXIES: "10.0.0.0/33" is not an IP address or a CIDR block such as 10.0.0.0/8',
      );
    });
  });
});
